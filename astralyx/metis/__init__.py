"""Metis: knowledge bases — documents, notes, model saves and memories of facts."""
