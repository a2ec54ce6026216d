"""The official Python SDK `upstash-redis` against kv-gateway (run by python-sdk.integration.spec.ts with
UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN and UPSTASH_REDIS_REST_READONLY_TOKEN of a fresh database).

Each test uses its own keys; docs/kv.md describes the API these calls reach."""

import asyncio
import os
import time

import pytest
from upstash_redis import Redis
from upstash_redis.asyncio import Redis as AsyncRedis
from upstash_redis.errors import UpstashError

URL = os.environ["UPSTASH_REDIS_REST_URL"]
TOKEN = os.environ["UPSTASH_REDIS_REST_TOKEN"]
READONLY_TOKEN = os.environ["UPSTASH_REDIS_REST_READONLY_TOKEN"]

needs_modules = pytest.mark.skipif(
    os.environ.get("RESTASH_KV_ENGINE") == "valkey",
    reason="the Valkey engine has no RedisJSON and no Redis Query Engine (docs/kv.md, where Upstash and Redis differ)",
)


@pytest.fixture
def redis() -> Redis:
    return Redis(url=URL, token=TOKEN, allow_telemetry=False)


def test_from_env(monkeypatch):
    client = Redis.from_env()
    assert client.ping() == "PONG"


def test_strings(redis):
    assert redis.set("py:s", "hello") is True
    assert redis.get("py:s") == "hello"
    assert redis.set("py:s", "x", nx=True) is False
    assert redis.set("py:s", "bye", get=True) == "hello"
    assert redis.append("py:s", "!") == 4
    assert redis.strlen("py:s") == 4
    assert redis.getrange("py:s", 0, 1) == "by"
    assert redis.mset({"py:a": "1", "py:b": "2"}) is True
    assert redis.mget("py:a", "py:b", "py:none") == ["1", "2", None]
    assert redis.incr("py:a") == 2
    assert redis.incrby("py:a", 10) == 12
    assert redis.incrbyfloat("py:a", 0.5) == 12.5
    assert redis.decr("py:b") == 1
    assert redis.getdel("py:b") == "1"
    assert redis.exists("py:b") == 0
    assert redis.set("py:ttl", "v", ex=100) is True
    assert 0 < redis.ttl("py:ttl") <= 100
    assert redis.persist("py:ttl") is True
    assert redis.ttl("py:ttl") == -1
    assert redis.delete("py:s", "py:a", "py:ttl") == 3


def test_binary_safe_and_unicode(redis):
    value = "ünïcødé \u2603 \x00 end"
    redis.set("py:u", value)
    assert redis.get("py:u") == value


def test_hashes(redis):
    assert redis.hset("py:h", values={"name": "ada", "age": "36"}) == 2
    assert redis.hget("py:h", "name") == "ada"
    assert redis.hgetall("py:h") == {"name": "ada", "age": "36"}
    assert redis.hmget("py:h", "name", "nope") == ["ada", None]
    assert redis.hincrby("py:h", "age", 1) == 37
    assert sorted(redis.hkeys("py:h")) == ["age", "name"]
    assert redis.hlen("py:h") == 2
    assert redis.hdel("py:h", "age") == 1
    assert redis.hexists("py:h", "age") is False


def test_hash_field_expiration(redis):
    redis.hset("py:hx", values={"a": "1", "b": "2"})
    assert redis.hexpire("py:hx", "a", 100) == [1]
    assert 0 < redis.httl("py:hx", "a")[0] <= 100
    assert redis.hpersist("py:hx", "a") == [1]
    # A time in the past deletes the field (Upstash's behaviour).
    assert redis.hexpireat("py:hx", "b", int(time.time()) - 10) == [2]
    assert redis.hgetall("py:hx") == {"a": "1"}


def test_lists(redis):
    assert redis.rpush("py:l", "a", "b", "c") == 3
    assert redis.lpush("py:l", "z") == 4
    assert redis.lrange("py:l", 0, -1) == ["z", "a", "b", "c"]
    assert redis.lpop("py:l") == "z"
    assert redis.rpop("py:l", 2) == ["c", "b"]
    assert redis.llen("py:l") == 1
    assert redis.lindex("py:l", 0) == "a"


def test_sets(redis):
    assert redis.sadd("py:set", "a", "b", "c") == 3
    assert redis.sismember("py:set", "a") is True
    assert redis.smembers("py:set") == {"a", "b", "c"} or sorted(redis.smembers("py:set")) == ["a", "b", "c"]
    assert redis.srem("py:set", "a") == 1
    assert redis.scard("py:set") == 2
    redis.sadd("py:set2", "b", "x")
    assert sorted(redis.sinter("py:set", "py:set2")) == ["b"]


def test_sorted_sets(redis):
    assert redis.zadd("py:z", {"a": 1, "b": 2, "c": 3}) == 3
    assert redis.zscore("py:z", "b") == 2
    assert redis.zrange("py:z", 0, -1) == ["a", "b", "c"]
    assert redis.zrange("py:z", 0, 1, withscores=True) == [("a", 1), ("b", 2)]
    assert redis.zrank("py:z", "c") == 2
    assert redis.zincrby("py:z", 5, "a") == 6
    assert redis.zrange("py:z", 0, -1, rev=True) == ["a", "c", "b"]
    assert redis.zcard("py:z") == 3
    assert redis.zrem("py:z", "a") == 1


def test_scan_and_keys(redis):
    for i in range(5):
        redis.set(f"py:scan:{i}", str(i))
    keys = []
    cursor = 0
    while True:
        cursor, page = redis.scan(cursor, match="py:scan:*", count=2)
        keys.extend(page)
        if cursor == 0:
            break
    assert sorted(keys) == [f"py:scan:{i}" for i in range(5)]
    assert sorted(redis.keys("py:scan:*")) == sorted(keys)


def test_streams(redis):
    first = redis.xadd("py:x", "*", {"f": "1"})
    redis.xadd("py:x", "*", {"f": "2"})
    assert redis.xlen("py:x") == 2
    entries = redis.xrange("py:x", "-", "+")
    assert [fields for _, fields in entries] == [{"f": "1"}, {"f": "2"}] or entries[0][0] == first
    for i in range(50):
        redis.xadd("py:xt", "*", {"i": str(i)})
    # `~` keeps at most about the threshold, as Upstash.
    # The SDK sends `~` unless told otherwise.
    redis.xtrim("py:xt", maxlen=30)
    assert redis.xlen("py:xt") <= 31


def test_eval_and_scripts(redis):
    assert redis.eval("return {KEYS[1], ARGV[1]}", keys=["k"], args=["v"]) == ["k", "v"]
    sha = redis.script_load("return ARGV[1]")
    assert redis.evalsha(sha, args=["hi"]) == "hi"
    assert redis.script_exists(sha) == [True] or redis.script_exists(sha) == [1]


@needs_modules
def test_json(redis):
    assert redis.json.set("py:j", "$", {"a": 1, "b": {"c": "x"}, "list": [1, 2]}) is True
    assert redis.json.get("py:j", "$.b.c") == ["x"]
    assert redis.json.numincrby("py:j", "$.a", 2) == [3]
    assert redis.json.arrappend("py:j", "$.list", 3) == [3]
    assert redis.json.strlen("py:j", "$.b.c") == [1]
    assert redis.json.type("py:j", "$.list") == ["array"]


def test_pipeline_and_transaction(redis):
    pipe = redis.pipeline()
    pipe.set("py:p", "1")
    pipe.incr("py:p")
    pipe.get("py:p")
    assert pipe.exec() == [True, 2, "2"]
    tx = redis.multi()
    tx.set("py:t", "a")
    tx.append("py:t", "b")
    tx.get("py:t")
    assert tx.exec() == [True, 2, "ab"]


def test_errors_are_raised_with_redis_text(redis):
    redis.set("py:str", "x")
    with pytest.raises(UpstashError, match="WRONGTYPE"):
        redis.lpush("py:str", "y")
    with pytest.raises(UpstashError):
        redis.execute(["NOSUCHCOMMAND"])


def test_read_only_token_reads_but_cannot_write(redis):
    redis.set("py:ro", "v")
    reader = Redis(url=URL, token=READONLY_TOKEN, allow_telemetry=False)
    assert reader.get("py:ro") == "v"
    with pytest.raises(UpstashError, match="NOPERM"):
        reader.set("py:ro", "w")


def test_wrong_token_is_refused():
    with pytest.raises(UpstashError):
        Redis(url=URL, token="wrong", allow_telemetry=False).get("py:any")


@needs_modules
def test_search_index_query_count_and_aliases(redis):
    redis.json.set("py:doc:1", "$", {"name": "laptop pro", "price": 1200})
    redis.json.set("py:doc:2", "$", {"name": "budget laptop", "price": 400})
    index = redis.search.create_index(name="py-products", data_type="json", prefixes="py:doc:", schema={"name": "TEXT", "price": {"type": "F64", "fast": True}})
    index.wait_indexing()
    hits = index.query(filter={"price": {"$lt": 1000}})
    assert [hit.key for hit in hits] == ["py:doc:2"]
    assert index.count(filter={"name": "laptop"}).count == 2
    assert redis.search.alias.add(index_name="py-products", alias="py-shop") == 1
    assert redis.search.alias.list() == {"py-shop": "py-products"}
    assert index.drop() == 1


def test_async_client():
    async def main():
        async with AsyncRedis(url=URL, token=TOKEN, allow_telemetry=False) as redis:
            await redis.set("py:async", "1")
            results = await asyncio.gather(*(redis.incr("py:async") for _ in range(10)))
            assert sorted(results) == list(range(2, 12))
            assert await redis.get("py:async") == "11"

    asyncio.run(main())
