"""Eos: models, deployments and the gateway."""
