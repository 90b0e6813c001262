"""Nexmark queries with regular and lookup joins (``workloads/nexmark.py``: Q0, Q3, Q13, Q20,
Q23) on seeded data, at several parallelisms and batch sizes, must give the reference
evaluator's table; Q3 and Q20 are also checked against the suite's SQL evaluated as a plain
inner join over the whole inputs (pyarrow's hash join)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import reference
from grizzly_py.workloads import nexmark

QUERIES = {name: nexmark.QUERIES[name] for name in ("q0", "q3", "q13", "q20", "q23")}
# Q23 pairs each bid with every auction of its (mostly hot) bidder: few events give many rows
EVENTS = {"q0": 6_000, "q3": 20_000, "q13": 6_000, "q20": 6_000, "q23": 1_200}


@pytest.mark.parametrize("name", QUERIES)
@pytest.mark.parametrize("parallelism, batch_rows", [(1, 97), (3, 1_000)])
def test_queries_match_the_reference(name, parallelism, batch_rows):
    tables = nexmark.generate_nexmark(EVENTS[name], seed=7, batch_rows=batch_rows)
    expected = reference.evaluate(QUERIES[name](gz.StreamEnvironment(), tables).node)
    env = gz.StreamEnvironment(parallelism=parallelism)
    QUERIES[name](env, tables).collect("out")
    assert_tables_equal(env.execute()["out"], expected)
    assert expected.num_rows > 0


def _sorted_rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    table = table.select(columns)
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_q3_and_q20_are_the_inner_joins_of_the_suites_sql():
    tables = nexmark.generate_nexmark(20_000, seed=11, batch_rows=500)
    persons = tables["person"].cast(pa.schema([f.with_type(pa.string()) if pa.types.is_dictionary(f.type) else f
                                               for f in tables["person"].schema]))
    auctions, bids = tables["auction"], tables["bid"]

    q3 = nexmark.q3(gz.StreamEnvironment(parallelism=2), tables["person"], auctions).execute_and_collect()
    sql = (auctions.filter(pc.field("category") == 10).select(["id", "seller"])
           .join(persons.filter(pc.field("state").isin(["OR", "ID", "CA"])).select(["id", "name", "city", "state"]),
                 keys="seller", right_keys="id", join_type="inner"))
    q3_rows = [(n, str(c), str(s), i) for n, c, s, i in _sorted_rows(q3, ["name", "city", "state", "id"])]
    assert q3_rows == _sorted_rows(sql, ["name", "city", "state", "id"]) and q3_rows

    q20 = nexmark.q20(gz.StreamEnvironment(parallelism=2), bids, auctions).execute_and_collect()
    sql = (bids.select(["auction", "bidder", "price", "dateTime"])
           .join(auctions.filter(pc.field("category") == 10).select(["id", "itemName"]),
                 keys="auction", right_keys="id", join_type="inner"))
    assert _sorted_rows(q20, ["auction", "bidder", "price", "bid_dateTime", "itemName"]) == \
        _sorted_rows(sql, ["auction", "bidder", "price", "dateTime", "itemName"])
