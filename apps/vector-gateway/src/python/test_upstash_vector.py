"""The official Python SDK `upstash-vector` against vector-gateway (run by python-sdk.integration.spec.ts with
UPSTASH_VECTOR_REST_URL and UPSTASH_VECTOR_REST_TOKEN of a DENSE COSINE index of dimension 2, and
RESTASH_SPARSE_URL/_TOKEN of a SPARSE one and RESTASH_TEXT_URL/_TOKEN of a HYBRID index with an embedding model
and BM25). Each test uses its own namespace; docs/vector.md describes the API these calls reach."""

import asyncio
import os

import pytest
from upstash_vector import AsyncIndex, Index, Vector
from upstash_vector.errors import UpstashError
from upstash_vector.types import FusionAlgorithm, MetadataUpdateMode, QueryMode, SparseVector, WeightingStrategy


@pytest.fixture
def index() -> Index:
    return Index.from_env()


@pytest.fixture
def sparse() -> Index:
    return Index(url=os.environ["RESTASH_SPARSE_URL"], token=os.environ["RESTASH_SPARSE_TOKEN"])


@pytest.fixture
def text() -> Index:
    return Index(url=os.environ["RESTASH_TEXT_URL"], token=os.environ["RESTASH_TEXT_TOKEN"])


def test_upsert_fetch_query(index):
    ns = "upsert"
    assert index.upsert(
        vectors=[
            ("a", [0.1, 0.2], {"kind": "x"}, "data-a"),
            {"id": "b", "vector": [0.9, 0.1], "metadata": {"kind": "y"}},
            Vector(id="c", vector=[0.2, 0.4]),
        ],
        namespace=ns,
    ) == "Success"
    fetched = index.fetch(["a", "missing"], include_vectors=True, include_metadata=True, include_data=True, namespace=ns)
    assert fetched[1] is None
    assert fetched[0].id == "a" and fetched[0].metadata == {"kind": "x"} and fetched[0].data == "data-a"
    assert fetched[0].vector == pytest.approx([0.1, 0.2])
    hits = index.query(vector=[0.1, 0.2], top_k=2, include_metadata=True, namespace=ns)
    # c is a multiple of a: both score 1 by cosine; ties are ordered by id.
    assert [h.id for h in hits] == ["a", "c"]
    assert hits[0].score == pytest.approx(1.0)
    assert index.query(vector=[0.1, 0.2], top_k=3, filter="kind = 'y'", namespace=ns)[0].id == "b"


def test_query_many_range_update_delete(index):
    ns = "many"
    index.upsert(vectors=[(f"v{i}", [1.0, float(i)]) for i in range(5)], namespace=ns)
    results = index.query_many(queries=[{"vector": [1.0, 0.0], "top_k": 1}, {"vector": [1.0, 4.0], "top_k": 1}], namespace=ns)
    assert [r[0].id for r in results] == ["v0", "v4"]
    page = index.range(cursor="", limit=3, namespace=ns)
    assert [v.id for v in page.vectors] == ["v0", "v1", "v2"]
    rest = index.range(cursor=page.next_cursor, limit=3, namespace=ns)
    assert [v.id for v in rest.vectors] == ["v3", "v4"] and rest.next_cursor == ""
    assert index.update("v1", metadata={"a": 1}, namespace=ns) is True
    assert index.update("v1", metadata={"b": 2}, metadata_update_mode=MetadataUpdateMode.PATCH, namespace=ns) is True
    assert index.fetch("v1", include_metadata=True, namespace=ns)[0].metadata == {"a": 1, "b": 2}
    assert index.update("nope", metadata={"a": 1}, namespace=ns) is False
    assert index.delete(["v0", "v1", "nope"], namespace=ns).deleted == 2
    assert index.delete(prefix="v", namespace=ns).deleted == 3


def test_namespaces_info_and_reset(index):
    index.upsert(vectors=[("x", [0.5, 0.5])], namespace="ns-info")
    assert "ns-info" in index.list_namespaces()
    info = index.info()
    assert info.dimension == 2 and info.similarity_function == "COSINE"
    assert info.dense_index.embedding_model == ""
    assert info.namespaces["ns-info"].vector_count == 1
    assert index.reset(namespace="ns-info") == "Success"
    index.delete_namespace("ns-info")
    assert "ns-info" not in index.list_namespaces()


def test_resumable_query(index):
    ns = "resumable"
    index.upsert(vectors=[(f"r{i}", [1.0, i / 10]) for i in range(4)], namespace=ns)
    first, handle = index.resumable_query(vector=[1.0, 0.0], top_k=2, namespace=ns)
    rest = handle.fetch_next(5)
    handle.stop()
    assert len(first) == 2 and len({h.id for h in first + rest}) == 4


def test_bad_input_raises_with_the_api_text(index):
    with pytest.raises(UpstashError, match="dimension"):
        index.upsert(vectors=[("bad", [1.0, 2.0, 3.0])])
    with pytest.raises(UpstashError, match="filter"):
        index.query(vector=[1.0, 0.0], filter="kind = ")


def test_sparse_index_with_idf(sparse):
    ns = "sparse"
    sparse.upsert(
        vectors=[
            Vector(id="s0", sparse_vector=SparseVector([0, 1], [0.1, 0.2])),
            Vector(id="s1", sparse_vector=SparseVector([1, 2], [0.2, 0.3])),
            # A repeated index is accepted and its values add up, as Upstash does.
            Vector(id="s2", sparse_vector=SparseVector([2, 3, 3], [0.3, 0.2, 0.2])),
        ],
        namespace=ns,
    )
    hits = sparse.query(sparse_vector=SparseVector([3], [1.0]), top_k=3, namespace=ns, include_vectors=True)
    assert [h.id for h in hits] == ["s2"]
    assert hits[0].sparse_vector.indices == [2, 3] and hits[0].sparse_vector.values == pytest.approx([0.3, 0.4])
    weighted = sparse.query(sparse_vector=SparseVector([1, 2], [1.0, 1.0]), top_k=3, weighting_strategy=WeightingStrategy.IDF, namespace=ns)
    assert {h.id for h in weighted} == {"s0", "s1", "s2"}


def test_hybrid_text_index_embeds_data(text):
    ns = "text"
    text.upsert(
        vectors=[("cat", "a cat sleeps in the sun"), ("dog", "a dog fetches a ball"), ("market", "stock prices fell on Monday")],
        namespace=ns,
    )
    assert text.query(data="kitten napping", top_k=1, namespace=ns)[0].id == "cat"
    assert text.query(data="Monday", top_k=1, query_mode=QueryMode.SPARSE, namespace=ns)[0].id == "market"
    assert len(text.query(data="ball", top_k=3, fusion_algorithm=FusionAlgorithm.DBSF, namespace=ns)) == 3
    assert text.fetch("dog", include_data=True, namespace=ns)[0].data == "a dog fetches a ball"


def test_async_index():
    async def main():
        index = AsyncIndex.from_env()
        await index.upsert(vectors=[(f"a{i}", [1.0, float(i)]) for i in range(3)], namespace="async")
        results = await asyncio.gather(*(index.fetch(f"a{i}", namespace="async") for i in range(3)))
        assert [r[0].id for r in results] == ["a0", "a1", "a2"]

    asyncio.run(main())
