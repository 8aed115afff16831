"""The Astralyx instance: one data directory, its database and the domain services.

The HTTP API, the CLI and the console are shells over this object.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from . import locks
from .auth import Keys, Workspaces
from .auth.roles import INSTANCE_WORKSPACE
from .config import Settings
from .engines import index_opener, open_records
from .eos import tools as tool_specs
from .eos.catalog import Models
from .eos.deployments import Deployments, DeploymentSpec, EmbeddedRuntime
from .eos.gateway import Gateway
from .eos.receipts import Receipts
from .eos.runtimes import Runtimes
from .metis.bases import KnowledgeBases
from .metis.index import Index
from .metis.memory import Memory
from .metis.memory.extract import Extractor
from .metis.memory.search import install as install_memory_search
from .metis.notes import Notes
from .metis.saves import Saves
from .metis.search import Search
from .metis.sync import Documents
from .migrations import migrate
from .migrations.records import STEPS as RECORD_STEPS
from .util import atomic_write, remove_orphan_temps

log = logging.getLogger("astralyx")


class Astralyx:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.load()
        self.home: Path = self.settings.home
        fresh = not (self.home / "astralyx.db").exists()
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        # The records: astralyx.db here, or PostgreSQL (database_url); brought to the latest schema version.
        self.db = open_records(self.home, self.settings.database_url or None)
        migrate(self.db, RECORD_STEPS)
        # Under PostgreSQL the bases' folders are locked with its advisory locks: replicas share them.
        locks.use_postgres(self.home, self.settings.database_url or None)
        self.workspaces = Workspaces(self.db)
        self.keys = Keys(self.db)
        self.models = Models(self.home)
        self.deployments = Deployments(self.db, self.models, self.workspaces)
        # Deployments made real: one loaded embedder / chat model per deployment.
        self.runtimes = Runtimes(self.deployments, self.models, scale_to_zero_after=self.settings.scale_to_zero_after)
        self.bases = KnowledgeBases(self.db, self.home, self.deployments)
        self.notes = Notes(self.bases)
        # Search: the per-base index follows notes as they change; documents come from sources and uploads.
        self.index = Index(self.bases, self.runtimes)
        if opener := index_opener(self.settings.database_url or None):
            self.index.open_store = opener
        self.notes.listeners.append(self.index.on_note)
        self.search = Search(self.bases, self.index)
        self.documents = Documents(self.bases, self.index)
        self.memory = Memory(self.bases, self.notes)
        # Facts are passages of their memory (current first); a change a crash interrupted is finished now.
        install_memory_search(self.index, self.search)
        self.memory.repair_interrupted()
        # Remember a conversation: the base's extractor proposes facts (reads runtimes and memory when called).
        self.extractor = Extractor(self)
        # Built-in tools of chat deployments (checked when a deployment is put), model saves, receipts, the gateway.
        self.deployments.validators.append(tool_specs.spec_validator(self.bases.find))
        self.saves = Saves(self.db, self.bases, self.notes, draft_days=self.settings.draft_expiry_days)
        self.receipts = Receipts(self.db, self.home)
        self.gateway = Gateway(self)
        # Set once, when this data directory was created without ASTRALYX_TOKEN: shown once.
        self.new_admin_key: str | None = None
        self.workspaces.on_create.append(self._default_deployments)
        if fresh or not self.workspaces.exists(INSTANCE_WORKSPACE):
            self._bootstrap()
        with locks.job(self.home, "start") as mine:  # once across replicas starting together
            if mine:
                self.bases.purge_trash()
                self.saves.purge_expired_drafts()
                self._remove_orphan_temps()

    def _bootstrap(self) -> None:
        """A new data directory gets workspace `default` and an admin key."""
        if not self.workspaces.exists(INSTANCE_WORKSPACE):
            self.workspaces.create(None, INSTANCE_WORKSPACE)
        if self.keys.count() == 0:
            token = os.environ.get("ASTRALYX_TOKEN") or None
            _, token = self.keys.create(None, INSTANCE_WORKSPACE, "admin", name="bootstrap admin", token=token)
            if not os.environ.get("ASTRALYX_TOKEN"):
                atomic_write(self.home / "admin.key", token + "\n", mode=0o600)
                self.new_admin_key = token

    def _default_deployments(self, workspace: str) -> None:
        """Zero configuration: every new workspace gets an embedded embedding model, so its
        bases can search with embeddings at once."""
        if self.deployments.find(workspace, "e5-small") is None:
            model = self.settings.default_embedding_model
            spec = DeploymentSpec(model=model, kind="embedding", runtime=EmbeddedRuntime())
            self.deployments.put(None, workspace, "e5-small", spec)

    def _remove_orphan_temps(self) -> None:
        """Temp files of atomic writes a crash interrupted stay in the bases' folders: remove them."""
        for base in self.bases.all():
            removed = remove_orphan_temps(base.folder)
            if removed:
                log.info("removed %d temp file(s) of interrupted writes in %s/%s", len(removed), base.workspace, base.name)

    def sync_all(self) -> dict:
        """Sync every base's index with its files and sources (at server start, e.g. in a thread)."""
        with locks.job(self.home, "sync-all") as mine:  # one replica syncs; the others skip it
            return self.documents.sync_all() if mine else {}

    def close(self) -> None:
        self.index.close_all()
        self.db.close()
        if self.settings.database_url:
            locks.use_postgres(self.home, None)
