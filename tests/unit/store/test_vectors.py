"""The semantic index's vectors: found again by meaning-like nearness (centred cosine), kept
in a file beside the store with the marks of how far it has read, and dropped and started
afresh when the file is damaged or was written by another embedder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from treechat.store.vectors import VectorIndex

NDIM = 8


def unit(*values: float) -> np.ndarray:
    v = np.zeros(NDIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def filled(path: Path | None) -> VectorIndex:
    index = VectorIndex(path, ndim=NDIM, model="test/8")
    index.add([1, 2, 3], np.stack([unit(1, 0.1), unit(0.1, 1), unit(-1, 0, 0.2)]))
    return index


def test_the_nearest_vector_comes_first() -> None:
    index = filled(None)
    assert len(index) == 3
    found = index.search(unit(1, 0.2), 2)
    assert [key for key, _ in found] == [1, 2]
    assert found[0][1] > found[1][1]
    assert [key for key, _ in index.score(unit(0, 1), [3, 2, 99])] == [2, 3]


def test_keys_are_replaced_removed_and_looked_up() -> None:
    index = filled(None)
    index.add([3], unit(0, 0, 1)[None, :])  # replaced, not added twice
    assert len(index) == 3
    index.remove([2, 42])
    assert index.present([1, 2, 3]) == [1, 3]
    assert index.keys_in(2, 10) == [3]
    assert index.search(unit(0, 0, 1), 1)[0][0] == 3


def test_the_file_keeps_vectors_and_marks_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "vectors.usearch"
    index = filled(path)
    index.set_mark("passages", "120")
    index.save()
    again = VectorIndex(path, ndim=NDIM, model="test/8")
    assert len(again) == 3 and again.mark("passages") == "120"
    assert again.search(unit(0.1, 1), 1)[0][0] == 2
    assert np.allclose(again.mean(), index.mean())


def test_another_embedders_or_a_damaged_file_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "vectors.usearch"
    filled(path).save()
    assert len(VectorIndex(path, ndim=NDIM, model="other/8")) == 0
    path.write_bytes(b"not an index")
    fresh = VectorIndex(path, ndim=NDIM, model="test/8")
    assert len(fresh) == 0 and fresh.mark("passages") == ""


def test_the_mean_is_shrunk_towards_zero_while_there_are_few() -> None:
    empty = VectorIndex(None, ndim=NDIM, model="test/8")
    assert not empty.mean().any()
    assert empty.search(unit(1), 3) == []
    index = filled(None)
    plain = np.stack([unit(1, 0.1), unit(0.1, 1), unit(-1, 0, 0.2)]).mean(axis=0)
    assert np.linalg.norm(index.mean()) < np.linalg.norm(plain)


def test_an_uncentred_index_gives_plain_cosines_and_no_mean() -> None:
    index = VectorIndex(None, ndim=NDIM, model="test/8", centred=False)
    index.add([1, 2], np.stack([unit(1, 0.1), unit(0.1, 1)]))
    assert not index.mean().any()
    (near, far) = index.search(unit(1, 0), 2)
    assert near[0] == 1 and abs(near[1] - float(unit(1, 0.1) @ unit(1, 0))) < 0.02
    assert far[0] == 2 and far[1] < near[1]
    assert index.score(unit(1, 0), [1])[0][1] > 0.98


def test_a_small_index_finds_exactly_the_nearest_and_a_scan_only_one_scores_them() -> None:
    rng = np.random.default_rng(7)
    # clustered, near-duplicate vectors, as repeated lines of code embed: where a graph's
    # approximate search loses some of the true nearest
    centres = rng.normal(size=(20, 64))
    data = (centres[rng.integers(0, 20, 3000)] + 0.05 * rng.normal(size=(3000, 64)))
    data = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    for graph in (True, False):
        index = VectorIndex(None, ndim=64, model="test/64", centred=False, graph=graph)
        index.add(list(range(3000)), data)
        near = data[:20] + 0.01
        for q in near / np.linalg.norm(near, axis=1, keepdims=True):
            truth = [s for _, s in index.score(q, list(range(3000)))[:10]]
            found = [s for _, s in index.search(q, 10)]
            assert np.allclose(found, truth, atol=2e-3)  # equals may swap at the tenth
