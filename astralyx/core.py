"""The Astralyx instance: one data directory, its database and the domain services.

The HTTP API, the CLI and the console are shells over this object.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .auth import Keys, Workspaces
from .auth.roles import INSTANCE_WORKSPACE
from .config import Settings
from .engines import open_records
from .eos import tools as tool_specs
from .eos.catalog import Models
from .eos.deployments import Deployments, DeploymentSpec, EmbeddedRuntime
from .eos.gateway import Gateway
from .eos.receipts import Receipts
from .eos.runtimes import Runtimes
from .locks import Locks
from .metis.bases import WORKSPACE_EMBEDDING, KnowledgeBases
from .metis.documents import Documents
from .metis.exchange import Exchange
from .metis.index import Index
from .metis.index.opener import index_opener
from .metis.index.service import read_note
from .metis.jobs import JobStore, SyncJobs
from .metis.memory import Memory
from .metis.memory.extract import Extractor
from .metis.memory.imports import Imports
from .metis.memory.search import PREFIX as FACTS_PREFIX
from .metis.memory.search import make_reader as fact_reader
from .metis.memory.search import rerank as rerank_facts
from .metis.notes import Notes
from .metis.roots import SourceRoots, parse_roots
from .metis.saves import Saves
from .metis.search import Search
from .metis.writer import Writer
from .migrations import migrate
from .migrations.records import STEPS as RECORD_STEPS
from .util import atomic_write, remove_orphan_temps

log = logging.getLogger("astralyx")


class Astralyx:
    """Building one opens the data directory (its database and services, every hook attached here);
    `start()` makes it ready to serve (the app's lifespan calls it, and so does every CLI command)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.load()
        self.home: Path = self.settings.home
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        # The records: astralyx.db here, or PostgreSQL (database_url); brought to the latest schema version.
        self.db = open_records(self.home, self.settings.database_url or None, self.settings)
        migrate(self.db, RECORD_STEPS)
        # Folders are locked with fcntl, or under PostgreSQL with its advisory locks (replicas share them): one
        # Locks for everyone who writes here, so each core locks by its own engine.
        self.locks = Locks(self.home, self.settings.database_url or None)
        settings = self.settings
        # Each service is built once, in dependency order, handed what it uses at construction. Where two need each
        # other, the later one registers with the earlier one's callback list, once, here (the hooks):
        # deployments.listeners, deployments.validators, bases.on_delete, workspaces.on_create.
        self.workspaces = Workspaces(self.db)
        self.keys = Keys(self.db)
        self.models = Models(self.home)
        self.deployments = Deployments(self.db, self.models, self.workspaces,
                                       allow_link_local_upstreams=settings.allow_link_local_upstreams)
        # Deployments made real: one loaded embedder / chat model per deployment, dropped when it changes.
        self.runtimes = Runtimes(self.deployments, self.models, scale_to_zero_after=settings.scale_to_zero_after)
        self.deployments.listeners.append(self.runtimes.drop)
        # A base created without saying embeds with e5-small if it can run (the runtimes' health says).
        self.bases = KnowledgeBases(self.db, self.home, self.deployments,
                                    source_roots=SourceRoots(self.home, parse_roots(settings.source_roots)),
                                    health=self.runtimes.health)
        # Every base's index: index.db in its folder, or a schema of the PostgreSQL database (index_opener); a memory's
        # facts read as passages (memory/search.py), the notes reader for a documents base's notes/memory/.
        self.index = Index(self.bases, self.runtimes, locks=self.locks,
                           open_store=index_opener(settings.database_url or None),
                           readers={FACTS_PREFIX: fact_reader(read_note)},
                           large_file=settings.large_file_passages, exact=settings.exact_search,
                           yield_to_searches=settings.yield_to_searches)
        self.bases.on_delete.append(self.index.drop)
        # Every file of a base is written through one writer; the index hears of each change from it.
        self.writer = Writer(self.locks, subscribers=[self.index.on_change])
        self.notes = Notes(self.bases, self.writer, locks=self.locks)
        # Facts are passages of their memory (current first).
        self.search = Search(self.bases, self.index, rerankers={"memory": rerank_facts})
        self.documents = Documents(self.bases, self.index, self.writer, SyncJobs(JobStore(self.db)), locks=self.locks)
        self.memory = Memory(self.bases, self.writer, locks=self.locks)
        # Export and import of a base: its spec, files and model saves as one archive; a memory's facts as markdown.
        self.exchange = Exchange(self.db, self.bases, self.memory, self.documents, locks=self.locks)
        # Remember a conversation: the base's extractor proposes facts, the memory says what each would become.
        self.extractor = Extractor(self.bases, self.memory, self.runtimes, self.deployments, self.models)
        # Chat archives imported into a memory: the chosen conversations read by the extractor in the background.
        self.imports = Imports(self.bases, self.memory, self.extractor, locks=self.locks)
        # Built-in tools of chat deployments (checked when a deployment is put), model saves, receipts, the gateway.
        self.deployments.validators.append(tool_specs.spec_validator(self.bases.find))
        self.saves = Saves(self.db, self.bases, self.notes, draft_days=settings.draft_expiry_days, locks=self.locks)
        self.bases.on_delete.append(self.saves.forget_base)
        self.receipts = Receipts(self.db, self.home)
        self.gateway = Gateway(self.db, self.deployments, self.runtimes, self.bases, self.search, self.saves,
                               self.receipts, edge=settings.edge)
        # Every new workspace gets an embedding deployment (the instance's own, at start, too).
        self.workspaces.on_create.append(self._default_deployments)
        # Set once, when this data directory was created without ASTRALYX_TOKEN: shown once.
        self.new_admin_key: str | None = None
        self._started = False

    def start(self) -> Astralyx:
        """Ready to serve: a new data directory gets its workspace and admin key; a change a crash interrupted
        is finished; deleted bases' trash, expired drafts and temp files of interrupted writes are cleared
        (by one of the replicas starting together). Once per instance (again after close). The start-up
        sync of every base is `sync_all`, run by `astra serve`."""
        if self._started:
            return self
        self._bootstrap()
        self.memory.repair_interrupted()  # each repair holds its base's lock: safe beside another replica's writes
        self.imports.reopen()
        with self.locks.job("start") as mine:  # once across replicas starting together
            if mine:
                self.bases.purge_trash()
                self.saves.purge_expired_drafts()
                self._remove_orphan_temps()
                self.imports.purge()  # imports older than a day lose their conversations
        self._started = True
        return self

    def _bootstrap(self) -> None:
        """A new data directory gets workspace `default` and an admin key. Under a lock of the data directory
        (an advisory lock under PostgreSQL): processes or replicas starting together on a new one make one
        workspace and one admin key, the others wait and find them."""
        with self.locks.folder(self.home / ".jobs" / "bootstrap"):
            self._bootstrap_locked()

    def _bootstrap_locked(self) -> None:
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
        if self.deployments.find(workspace, WORKSPACE_EMBEDDING) is None:
            model = self.settings.default_embedding_model
            spec = DeploymentSpec(model=model, kind="embedding", runtime=EmbeddedRuntime())
            self.deployments.put(None, workspace, WORKSPACE_EMBEDDING, spec)

    def _remove_orphan_temps(self) -> None:
        """Temp files of atomic writes a crash interrupted stay in the bases' folders: remove them."""
        for base in self.bases.all():
            removed = remove_orphan_temps(base.folder)
            if removed:
                log.info("removed %d temp file(s) of interrupted writes in %s/%s", len(removed), base.workspace, base.name)

    def sync_all(self) -> dict[str, Any]:
        """Sync every base's index with its files and sources (at server start, e.g. in a thread):
        a job per base, one after another, each with its status at GET …/knowledge-bases/<b>/sync.
        Across replicas starting together, one syncs; the others skip it ({})."""
        with self.locks.job("sync-all") as mine:
            return self.documents.sync_all() if mine else {}

    def close(self) -> None:
        """Close the open files (index files, database connections); what runs again after it reopens them."""
        self.documents.jobs.stop()  # syncs under way stop at their next batch
        self.imports.close()  # imports under way stop after their conversation; the next start continues them
        self.runtimes.close()  # embedded chat models' worker processes end with the server
        self.index.close_all()
        self.db.close()
        self._started = False
