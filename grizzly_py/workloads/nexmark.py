"""Seeded Nexmark generator (persons, auctions, bids) and the Nexmark queries grizzly-py runs.

The event stream follows the Nexmark generator of the Flink suite in its proportions and id
scheme: out of every 50 events, 1 is a person, 3 are auctions and 46 are bids (2% / 6% / 92%).
Event ``i`` happens at ``EPOCH_MS + i * 1000 // events_per_second``. Ids start at 1000 and grow
with the events of their kind; a bid goes, with probability 1/2, to the current hot auction
(the newest auction id rounded down to a multiple of 100), else to one of the 100 newest
auctions; its bidder is the hot person (the newest person id rounded down to a multiple of 100)
with probability 3/4, else one of the 100 newest persons. Prices are Nexmark's
``round(10 ** (u * 6) * 100)`` cents. Each stream has its own generator (``generate_bids``,
``generate_persons``, ``generate_auctions``; ``generate_nexmark`` gives all three), so that a
query generates only the streams it reads.

A bid's strings follow the suite's BidGenerator, as plain (not dictionary-encoded) strings: its
``channel`` is, with probability 1/2, one of the four hot channels (Google, Facebook, Baidu,
Apple), else ``channel-j`` for ``j`` uniform in 0..9999. Each channel has one ``url``,
``https://www.nexmark.com/<d1>/<d2>/<d3>/item.htm?query=1`` with directories of 3-4 characters
(a-z, 1 in 13 an underscore); 9 in 10 of the ``channel-j`` urls end in ``&channel_id=<id>``,
``id`` being Java's ``Math.abs(Integer.reverse(j))``. ``extra`` is 54 to 81 random lowercase
letters (the suite's filler for an average bid of 100 bytes). The channels, urls and letters
depend on the seed only, not on the number of events.

Schemas (api of the Nexmark suite, ``dateTime`` as int64 epoch milliseconds):

- Person(id, name, emailAddress, creditCard, city, state, dateTime)
- Auction(id, itemName, description, initialBid, reserve, dateTime, expires, seller, category)
- Bid(auction, bidder, price, channel, url, dateTime, extra)

Queries: ``q1`` (currency conversion: ``auction, bidder, 0.908 * price, dateTime``), ``q2``
(selection: ``auction, price`` of bids whose ``auction % 123 == 0``), ``q5_counts`` (the first
two steps of Q5 "hot items": bids per auction in 10 s windows sliding by 2 s, then the largest
count per window), ``q5`` (all of Q5: the counts joined with that maximum, keeping the auctions
whose count equals it), ``q7`` (highest bid: the bids whose price is the maximum of their 10 s
tumbling window, a window join of the bids with their per-window maximum), ``q8`` (new users:
persons joined with the auctions they opened in the same 10 s tumbling window, counted per
person and window), ``q11`` (user sessions: the bids per bidder and session window with a
10 s gap), ``q18_window`` and ``q19_window`` (Q18 "find last bid" and Q19 "auction
top-10 price" per 10 s tumbling window: window deduplication and window Top-N), and the string
and date queries of the Flink suite: ``q10`` (the bids with
their date ``yyyy-MM-dd`` and time ``HH:mm`` as strings, ``dt.strftime``), ``q14`` (a price
filter, the time of day as ``dayTime``/``nightTime``/``otherTime`` from the hour, the ``c``s of
``extra`` counted: ``if_else`` with strings, ``str.count_matches``), ``q21`` (a channel id from
the channel's name in lower case or, by a regular expression, from the url: ``str.to_lowercase``,
``str.extract``) and ``q22`` (the url's directories: ``str.split_part``). Flink's
``DATE_FORMAT`` and ``HOUR`` are in the session's time zone; these are in UTC.

Queries with regular and lookup joins: ``q0`` (pass-through: every bid column), ``q3`` (local item
suggestion: the persons in OR, ID or CA joined with the auctions of category 10 they sell, a
regular join), ``q13`` (bounded side input: each bid joined on ``auction % 10000`` with the
static table ``q13_side_input()``, a lookup join), ``q20`` (the bids joined with their auction,
category 10) and ``q23`` (a multi-way regular join: the bids joined with their bidder's person
record and with every auction that person sells). The suite's ``extra`` columns of persons and
auctions are not generated, so Q20 and Q23 leave them out.
Running aggregates (updating streams: ``collect`` gives the final table, ``changelog()`` the
changes): ``q15`` (bidding statistics: per day, the bids, bidders and auctions, in all and per
price rank: ``count_distinct`` with ``where=``), ``q16`` (channel statistics: Q15 per channel and
day, with the day's last minute ``HH:mm``), ``q17`` (auction statistics: per auction and day, the
bids, the bids per price rank and the minimum, maximum, average and total price), ``q18`` (the last bid of each bidder on each
auction: ``deduplicate(keep="last")``) and ``q4`` (the average winning price per category: a
regular join, a running maximum per auction, and a running average of those maxima, which takes
back an auction's old maximum when it grows).
Unbounded Top-N (updating streams too): ``q19`` (auction top-10 price: per auction its 10 highest
bids so far, ``top_n``) and ``q9`` (winning bids: each auction joined with its bids placed
between its ``dateTime`` and ``expires``, a regular join, then per auction the highest bid, the
earliest of equal ones).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH_MS = 1_700_000_000_000
EVENTS_PER_SECOND = 100_000
PROPORTION = 50  # events per cycle: 1 person, 3 auctions, 46 bids
PERSONS_PER_CYCLE, AUCTIONS_PER_CYCLE = 1, 3
FIRST_ID = 1000
HOT_RATIO = 100  # hot ids are multiples of this
IN_FLIGHT = 100  # non-hot bids go to one of this many newest auctions / persons
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
HOT_CHANNEL_PROBABILITY = 0.5  # else one of the CHANNELS_NUMBER others, uniformly
CHANNELS_NUMBER = 10_000
URL_HOST, URL_PAGE = "https://www.nexmark.com", "item.htm?query=1"
EXTRA_LENGTH = (54, 81)  # Nexmark's extra for a 100-byte average bid: 68 bytes +- 20%
EXTRA_TEXT_BYTES = 1 << 20
Q2_MODULUS = 123
Q5_SIZE_MS, Q5_SLIDE_MS = 10_000, 2_000
Q7_WINDOW_MS = Q8_WINDOW_MS = 10_000
Q11_GAP_MS = 10_000  # a bidder's session ends after 10 s without a bid
Q14_MIN_PRICE, Q14_MAX_PRICE = 1_000_000, 50_000_000
Q18_WINDOW_MS = Q19_WINDOW_MS = 10_000
Q19_TOP = 10
Q21_CHANNELS = ("apple", "google", "facebook", "baidu")  # channel ids 0, 1, 2, 3
RANK_PRICES = (10_000, 1_000_000)  # Q15-Q17's price ranks: below, between, from the second
Q21_CHANNEL_ID = "(&|^)channel_id=([^&]*)"
Q3_STATES = ("OR", "ID", "CA")
Q3_Q20_CATEGORY = 10
Q13_KEYS = 10_000  # the side input's keys: auction % Q13_KEYS


def _chunked(table: pa.Table, batch_rows: int) -> pa.Table:
    return pa.Table.from_batches(table.to_batches(max_chunksize=batch_rows), schema=table.schema)


def _event_ids(n_events: int, kind_offsets: range) -> np.ndarray:
    """Indices of the events (0..n_events-1) whose position in its cycle is in kind_offsets."""
    cycles = -(-n_events // PROPORTION)
    idx = (np.arange(cycles, dtype=np.int64)[:, None] * PROPORTION
           + np.asarray(kind_offsets, dtype=np.int64)[None, :]).ravel()
    return idx[idx < n_events]


def _date_time(idx: np.ndarray, events_per_second: int) -> np.ndarray:
    return EPOCH_MS + (idx * 1000) // events_per_second


def generate_bids(n_events: int, seed: int = 42, events_per_second: int = EVENTS_PER_SECOND,
                  batch_rows: int = 1 << 16) -> pa.Table:
    """The bids among the first ``n_events`` Nexmark events (about 92% of them)."""
    if n_events < 0 or batch_rows < 1 or events_per_second < 1:
        raise ValueError("n_events must be >= 0, batch_rows and events_per_second >= 1")
    rng = np.random.default_rng([seed, 3])
    idx = _event_ids(n_events, range(PERSONS_PER_CYCLE + AUCTIONS_PER_CYCLE, PROPORTION))
    n = idx.size
    cycle = idx // PROPORTION
    last_auction = cycle * AUCTIONS_PER_CYCLE + AUCTIONS_PER_CYCLE - 1  # base-0, created already
    last_person = cycle * PERSONS_PER_CYCLE + PERSONS_PER_CYCLE - 1

    def pick(last: np.ndarray, hot_probability: float) -> np.ndarray:
        hot = rng.random(n) < hot_probability
        recent = last - rng.integers(0, IN_FLIGHT, size=n)
        return FIRST_ID + np.where(hot, (last // HOT_RATIO) * HOT_RATIO, np.maximum(recent, 0))

    auction = pick(last_auction, 0.5)
    bidder = pick(last_person, 0.75)
    price = np.round(10.0 ** (rng.random(n) * 6.0) * 100.0).astype(np.int64)
    channels, urls, text = _bid_strings(seed)
    hot = rng.random(n) < HOT_CHANNEL_PROBABILITY
    which = np.where(hot, rng.integers(0, len(HOT_CHANNELS), size=n),
                     len(HOT_CHANNELS) + rng.integers(0, CHANNELS_NUMBER, size=n))
    extra_length = rng.integers(EXTRA_LENGTH[0], EXTRA_LENGTH[1] + 1, size=n)
    table = pa.table({"auction": auction, "bidder": bidder, "price": price,
                      "channel": _take_chunks(channels, which, batch_rows),
                      "url": _take_chunks(urls, which, batch_rows),
                      "dateTime": _date_time(idx, events_per_second),
                      "extra": _pieces(text, extra_length, batch_rows)})
    return _chunked(table, batch_rows)


def _bid_strings(seed: int) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The channel names and their urls (index i < 4: the hot channels; 4 + j: ``channel-j``),
    and the random text the ``extra`` strings are cut from. They depend on the seed only."""
    rng = np.random.default_rng([seed, 4])
    n = len(HOT_CHANNELS) + CHANNELS_NUMBER
    # Nexmark's base url: three directories of 3-4 characters, a-z with 1 in 13 an underscore
    words = [_random_words(rng, n, 3, 4, "_") for _ in range(3)]
    urls = pc.binary_join_element_wise(URL_HOST, *words, URL_PAGE, "/")
    j = np.arange(CHANNELS_NUMBER, dtype=np.uint32)
    with_id = np.concatenate([np.zeros(len(HOT_CHANNELS), bool), rng.integers(0, 10, size=CHANNELS_NUMBER) > 0])
    ids = pa.array(np.concatenate([np.zeros(len(HOT_CHANNELS), np.int32), _channel_ids(j)])).cast(pa.string())
    urls = pc.if_else(pa.array(with_id), pc.binary_join_element_wise(urls, ids, "&channel_id="), urls)
    names = pa.concat_arrays([pa.array(HOT_CHANNELS),
                              pc.binary_join_element_wise("channel", pa.array(j).cast(pa.string()), "-")])
    text = rng.integers(ord("a"), ord("z") + 1, size=EXTRA_TEXT_BYTES, dtype=np.uint8)
    return names, urls, text


def _channel_ids(j: np.ndarray) -> np.ndarray:
    """Nexmark's channel id of ``channel-j``: Java's ``Math.abs(Integer.reverse(j))`` (32-bit:
    the bits of ``j`` reversed, as a signed int, whose absolute value wraps at -2**31)."""
    bits = (j[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
    reversed_bits = (bits << (31 - np.arange(32, dtype=np.uint32))).sum(axis=1, dtype=np.uint32)
    with np.errstate(over="ignore"):
        return np.abs(reversed_bits.view(np.int32))


def _random_words(rng, n: int, shortest: int, longest: int, special: str) -> pa.Array:
    """``n`` words of ``shortest`` to ``longest`` characters: a-z, each one ``special`` with
    probability 1/13 (Nexmark's ``nextString``)."""
    lengths = rng.integers(shortest, longest + 1, size=n)
    letters = rng.integers(ord("a"), ord("z") + 1, size=(n, longest), dtype=np.uint8)
    letters[rng.integers(0, 13, size=(n, longest)) == 0] = ord(special)
    data = letters[np.arange(longest) < lengths[:, None]]  # row by row, each cut to its length
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _take_chunks(values: pa.Array, which: np.ndarray, batch_rows: int) -> pa.ChunkedArray:
    """``values[which]`` in chunks of ``batch_rows`` (so that no chunk outgrows 32-bit offsets)."""
    return pa.chunked_array([values.take(pa.array(which[i:i + batch_rows]))
                             for i in range(0, which.size, batch_rows)], values.type)


def _pieces(text: np.ndarray, lengths: np.ndarray, batch_rows: int) -> pa.ChunkedArray:
    """Strings of ``lengths`` bytes cut one after the other from ``text`` repeated, in chunks
    of ``batch_rows`` (Nexmark cuts each from a random offset: the same letters and lengths,
    without gathering every byte)."""
    ends = np.cumsum(lengths)
    data = pa.py_buffer(np.resize(text, int(ends[-1]) if ends.size else 0))
    chunks = []
    for i in range(0, lengths.size, batch_rows):
        j = min(i + batch_rows, lengths.size)
        first = int(ends[i - 1]) if i else 0
        offsets = np.concatenate([[0], ends[i:j] - first]).astype(np.int32)
        chunks.append(pa.StringArray.from_buffers(j - i, pa.py_buffer(offsets), data.slice(first, int(ends[j - 1]) - first)))
    return pa.chunked_array(chunks, pa.string())


_FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
_LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
           "Kent", "Cheyenne")
_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")


def _dictionary(rng, values: tuple[str, ...], n: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(values), size=n, dtype=np.int32)),
                                          pa.array(values))


def generate_persons(n_events: int, seed: int = 42, events_per_second: int = EVENTS_PER_SECOND,
                     batch_rows: int = 1 << 16) -> pa.Table:
    """The persons among the first ``n_events`` events (2%)."""
    rng = np.random.default_rng([seed, 1])
    idx = _event_ids(n_events, range(PERSONS_PER_CYCLE))
    n = idx.size
    ids = FIRST_ID + np.arange(n, dtype=np.int64)
    names = pa.compute.binary_join_element_wise(
        _dictionary(rng, _FIRST_NAMES, n).cast(pa.string()),
        _dictionary(rng, _LAST_NAMES, n).cast(pa.string()), " ")
    email = pa.array([f"person{i}@nexmark.com" for i in ids.tolist()], pa.string())
    card = pa.array([f"{a:04d} {b:04d} {c:04d} {d:04d}" for a, b, c, d in
                     rng.integers(0, 10_000, size=(n, 4)).tolist()], pa.string())
    table = pa.table({"id": ids, "name": names, "emailAddress": email, "creditCard": card,
                      "city": _dictionary(rng, _CITIES, n), "state": _dictionary(rng, _STATES, n),
                      "dateTime": _date_time(idx, events_per_second)})
    return _chunked(table, batch_rows)


def generate_auctions(n_events: int, seed: int = 42, events_per_second: int = EVENTS_PER_SECOND,
                      batch_rows: int = 1 << 16) -> pa.Table:
    """The auctions among the first ``n_events`` events (6%)."""
    rng = np.random.default_rng([seed, 2])
    idx = _event_ids(n_events, range(PERSONS_PER_CYCLE, PERSONS_PER_CYCLE + AUCTIONS_PER_CYCLE))
    n = idx.size
    ids = FIRST_ID + np.arange(n, dtype=np.int64)
    last_person = (idx // PROPORTION) * PERSONS_PER_CYCLE
    hot = rng.random(n) < 0.5
    seller = FIRST_ID + np.where(hot, (last_person // HOT_RATIO) * HOT_RATIO,
                                 np.maximum(last_person - rng.integers(0, IN_FLIGHT, size=n), 0))
    initial = np.round(10.0 ** (rng.random(n) * 6.0) * 100.0).astype(np.int64)
    date_time = _date_time(idx, events_per_second)
    table = pa.table({
        "id": ids, "itemName": pa.array([f"item{i}" for i in ids.tolist()], pa.string()),
        "description": pa.array([f"description of item {i}" for i in ids.tolist()], pa.string()),
        "initialBid": initial, "reserve": initial + rng.integers(0, 10_000, size=n),
        "dateTime": date_time, "expires": date_time + rng.integers(1_000, 60_000, size=n),
        "seller": seller, "category": 10 + rng.integers(0, 5, size=n),
    })
    return _chunked(table, batch_rows)


def generate_nexmark(n_events: int, seed: int = 42, events_per_second: int = EVENTS_PER_SECOND,
                     batch_rows: int = 1 << 16) -> dict[str, pa.Table]:
    """All three streams of the first ``n_events`` events: {"person", "auction", "bid"}."""
    return {"person": generate_persons(n_events, seed, events_per_second, batch_rows),
            "auction": generate_auctions(n_events, seed, events_per_second, batch_rows),
            "bid": generate_bids(n_events, seed, events_per_second, batch_rows)}


def q1(env, bids: pa.Table):
    """Nexmark Q1, currency conversion: auction, bidder, 0.908 * price (float64), dateTime."""
    from .. import col
    return (env.from_arrow(bids, timestamp="dateTime")
            .select("auction", "bidder", price=col("price") * 0.908, dateTime=col("dateTime")))


def q2(env, bids: pa.Table):
    """Nexmark Q2, selection: auction, price of the bids with auction % 123 == 0."""
    from .. import col
    return (env.from_arrow(bids, timestamp="dateTime")
            .filter(col("auction") % Q2_MODULUS == 0)
            .select("auction", "price"))


def _tumbling(ms: int):
    from .. import Time
    from ..windows import TumblingEventTimeWindows
    return TumblingEventTimeWindows.of(Time.milliseconds(ms))


def _q5_steps(env, bids: pa.Table):
    """Q5's first two steps: (counts per auction and sliding window, max count per window)."""
    from .. import Time, agg
    from ..windows import SlidingEventTimeWindows
    counts = (env.from_arrow(bids, timestamp="dateTime")
              .key_by("auction")
              .window(SlidingEventTimeWindows.of(Time.milliseconds(Q5_SIZE_MS),
                                                 Time.milliseconds(Q5_SLIDE_MS)))
              .aggregate(num=agg.count()))
    return counts, counts.window_all(_tumbling(Q5_SLIDE_MS)).aggregate(max_num=agg.max("num"))


def q5_counts(env, bids: pa.Table):
    """Nexmark Q5, first two steps as chained windows: bids per auction in 10 s windows sliding
    by 2 s, then the largest count per window. Output: window_start, window_end (of a 2 s window
    whose end is the sliding window's end), max_num."""
    return _q5_steps(env, bids)[1]


def q5(env, bids: pa.Table):
    """Nexmark Q5, hot items: the auctions with the most bids in each 10 s window sliding by 2 s.
    The counts of one sliding window carry event time ``window_end - 1``, so they and their
    maximum meet in one 2 s tumbling window, whose end is the sliding window's: a window join on
    ``num == max_num`` keeps the auctions that reach the maximum (ties: all of them). Output:
    window_end, auction, num."""
    counts, maxima = _q5_steps(env, bids)
    return (counts.select("auction", "num")
            .join(maxima.select("max_num")).where("num").equal_to("max_num")
            .window(_tumbling(Q5_SLIDE_MS))
            .select("window_end", "auction", "num"))


def q7(env, bids: pa.Table):
    """Nexmark Q7, highest bid: the bids whose price is the maximum of their 10 s tumbling window
    (ties: all of them). The bid source is read once and feeds both join inputs: the bids and
    their window's maximum (whose event time ``window_end - 1`` lies in that window). Output:
    window_end, auction, bidder, price, dateTime."""
    return highest_bids(env.from_arrow(bids, timestamp="dateTime"))


def highest_bids(stream):
    """Nexmark Q7 (``q7``) over a stream of bids from any source (event time ``dateTime``)."""
    from .. import agg
    highest = stream.window_all(_tumbling(Q7_WINDOW_MS)).aggregate(maxprice=agg.max("price"))
    return (stream.select("auction", "bidder", "price", "dateTime")
            .join(highest.select("maxprice")).where("price").equal_to("maxprice")
            .window(_tumbling(Q7_WINDOW_MS))
            .select("window_end", "auction", "bidder", "price", "dateTime"))


def q8(env, persons: pa.Table, auctions: pa.Table):
    """Nexmark Q8, monitor new users: the persons who opened auctions in the 10 s tumbling window
    in which they registered: persons join auctions on ``person.id == auction.seller`` per
    window, then one row per person and window with the number of those auctions (the join's
    pairs carry event time ``window_end - 1``, so the window after it is the same window).
    Output: id, name, window_start, window_end, auctions."""
    from .. import agg
    sellers = (env.from_arrow(persons, timestamp="dateTime").select("id", "name", "dateTime")
               .join(env.from_arrow(auctions, timestamp="dateTime").select("seller", "dateTime"))
               .where("id").equal_to("seller").window(_tumbling(Q8_WINDOW_MS)))
    return sellers.key_by("id", "name").window(_tumbling(Q8_WINDOW_MS)).aggregate(auctions=agg.count())


def q11(env, bids: pa.Table):
    """Nexmark Q11, user sessions: per bidder, the bids of each session (bids at most
    ``Q11_GAP_MS`` apart, an event-time session window). Output: bidder, window_start,
    window_end (Flink's SESSION_START/END), bid_count."""
    from .. import Time, agg
    from ..windows import EventTimeSessionWindows
    return (env.from_arrow(bids, timestamp="dateTime").key_by("bidder")
            .window(EventTimeSessionWindows.with_gap(Time.milliseconds(Q11_GAP_MS)))
            .aggregate(bid_count=agg.count()))


def q18_window(env, bids: pa.Table):
    """Nexmark Q18, find last bid, per 10 s tumbling window (Flink's window deduplication): the
    last bid of each (bidder, auction) in each window, by event time (ties: the later arrival).
    Output: window_start, window_end, auction, bidder, price, channel, dateTime."""
    return (env.from_arrow(bids, timestamp="dateTime").select("auction", "bidder", "price", "channel", "dateTime")
            .key_by("bidder", "auction").window(_tumbling(Q18_WINDOW_MS)).deduplicate(keep="last"))


def q19_window(env, bids: pa.Table):
    """Nexmark Q19, auction top-10 price, per 10 s tumbling window (Flink's window Top-N): the 10
    highest bids of each auction in each window (ties: the earlier arrival). Output:
    window_start, window_end, auction, bidder, price, dateTime, rank."""
    return (env.from_arrow(bids, timestamp="dateTime").select("auction", "bidder", "price", "dateTime")
            .key_by("auction").window(_tumbling(Q19_WINDOW_MS)).top_n(Q19_TOP, by="price"))


def q10(env, bids: pa.Table):
    """Nexmark Q10, log to file system (the projection part): auction, bidder, price, dateTime,
    extra and the partition columns ``dt`` (``yyyy-MM-dd``) and ``hm`` (``HH:mm``) of the bid's
    time (UTC)."""
    from .. import col
    return (env.from_arrow(bids, timestamp="dateTime")
            .select("auction", "bidder", "price", "dateTime", "extra",
                    dt=col("dateTime").dt.strftime("%Y-%m-%d"), hm=col("dateTime").dt.strftime("%H:%M")))


def q14(env, bids: pa.Table):
    """Nexmark Q14, calculation: the bids whose converted price ``0.908 * price`` (float64) lies
    strictly between 1,000,000 and 50,000,000, with ``bidTimeType`` from the hour of the bid
    (8-18: dayTime, up to 6 and from 20: nightTime, else otherTime) and ``c_counts``, the number
    of ``c`` in ``extra`` (the suite's ``count_char`` UDF). Output: auction, bidder, price,
    bidTimeType, dateTime, extra, c_counts."""
    from .. import col, if_else
    converted, hour = col("price") * 0.908, col("dateTime").dt.hour()
    time_type = if_else((hour >= 8) & (hour <= 18), "dayTime",
                        if_else((hour <= 6) | (hour >= 20), "nightTime", "otherTime"))
    return (env.from_arrow(bids, timestamp="dateTime")
            .filter((converted > Q14_MIN_PRICE) & (converted < Q14_MAX_PRICE))
            .select("auction", "bidder", price=converted, bidTimeType=time_type, dateTime=col("dateTime"),
                    extra=col("extra"), c_counts=col("extra").str.count_matches("c", literal=True)))


def q21(env, bids: pa.Table):
    """Nexmark Q21, add a channel id: ``0`` to ``3`` for the four hot channels (by their name in
    lower case), else the ``channel_id`` parameter of the url (``Q21_CHANNEL_ID``, group 2); the
    bids with neither are dropped. Output: auction, bidder, price, channel, channel_id."""
    from .. import col, if_else
    lower, from_url = col("channel").str.to_lowercase(), col("url").str.extract(Q21_CHANNEL_ID, 2)
    channel_id = from_url
    for code, name in reversed(list(enumerate(Q21_CHANNELS))):
        channel_id = if_else(lower == name, str(code), channel_id)
    return (env.from_arrow(bids, timestamp="dateTime")
            .filter(from_url.is_not_null() | lower.isin(Q21_CHANNELS))
            .select("auction", "bidder", "price", "channel", channel_id=channel_id))


def q22(env, bids: pa.Table):
    """Nexmark Q22, url directories: pieces 3, 4 and 5 (0-based) of the url split at ``/``, null
    where the url has fewer pieces (Flink's ``SPLIT_INDEX``). Output: auction, bidder, price,
    channel, dir1, dir2, dir3."""
    from .. import col
    url = col("url").str
    return (env.from_arrow(bids, timestamp="dateTime")
            .select("auction", "bidder", "price", "channel",
                    dir1=url.split_part("/", 3), dir2=url.split_part("/", 4), dir3=url.split_part("/", 5)))


def q0(env, bids: pa.Table):
    """Nexmark Q0, pass-through: every bid column, unchanged (the cost of reading and writing)."""
    return env.from_arrow(bids, timestamp="dateTime").select(*bids.column_names)


def q3(env, persons: pa.Table, auctions: pa.Table):
    """Nexmark Q3, local item suggestion: who sells in OR, ID or CA in category 10, and which
    auctions: the auctions of category 10 joined with their seller (a regular join on
    ``auction.seller == person.id``, the persons filtered by state). Output: name, city, state,
    id (the auction's)."""
    from .. import col
    sellers = env.from_arrow(auctions, timestamp="dateTime").filter(col("category") == Q3_Q20_CATEGORY)
    people = env.from_arrow(persons, timestamp="dateTime").filter(col("state").isin(list(Q3_STATES)))
    return (sellers.select("id", "seller", "dateTime")
            .join(people.select("id", "name", "city", "state", "dateTime")).where("seller").equal_to("id")
            .select("name", "city", "state", "id"))


def q13_side_input(keys: int = Q13_KEYS) -> pa.Table:
    """Q13's bounded side input: ``key`` 0..keys-1 and a string ``value`` per key."""
    key = np.arange(keys, dtype=np.int64)
    return pa.table({"key": key, "value": pa.array([f"value-{k}" for k in key.tolist()])})


def q13(env, bids: pa.Table, side_input: pa.Table | None = None):
    """Nexmark Q13, bounded side input join: each bid joined with the row of the static table
    (default ``q13_side_input()``) whose key is ``auction % 10000`` (a lookup join). Output:
    auction, bidder, price, dateTime, value."""
    from .. import col
    side_input = q13_side_input() if side_input is None else side_input
    return (env.from_arrow(bids, timestamp="dateTime")
            .with_columns(key=col("auction") % Q13_KEYS)
            .lookup_join(side_input, "key")
            .select("auction", "bidder", "price", "dateTime", "value"))


def q20(env, bids: pa.Table, auctions: pa.Table):
    """Nexmark Q20, expand bid with auction: the bids joined with their auction (a regular join on
    ``bid.auction == auction.id``), the auctions of category 10. Output: the bid's columns (its
    ``dateTime`` as ``bid_dateTime``, ``extra`` as ``bid_extra``), then itemName, description,
    initialBid, reserve, auction_dateTime, expires, seller, category."""
    from .. import col
    items = (env.from_arrow(auctions, timestamp="dateTime").filter(col("category") == Q3_Q20_CATEGORY)
             .select("id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller",
                     "category"))
    return (env.from_arrow(bids, timestamp="dateTime")
            .select("auction", "bidder", "price", "channel", "url", "dateTime", "extra")
            .join(items).where("auction").equal_to("id")
            .select("auction", "bidder", "price", "channel", "url", "itemName", "description", "initialBid",
                    "reserve", "expires", "seller", "category", bid_dateTime="dateTime", bid_extra="extra",
                    auction_dateTime="dateTime_right"))


def q23(env, bids: pa.Table, persons: pa.Table, auctions: pa.Table):
    """Nexmark Q23, expand bid with person and auction (a multi-way join): the bids joined with
    their bidder (``person.id == bid.bidder``), then with every auction that bidder sells
    (``auction.seller == bid.bidder``); both regular joins. Output: bidder, price, channel, url,
    bid_extra, person_id, name, emailAddress, creditCard, city, state, itemName, description,
    initialBid, reserve, auction_dateTime, expires, seller, category."""
    by_person = (env.from_arrow(bids, timestamp="dateTime")
                 .select("bidder", "price", "channel", "url", "dateTime", bid_extra="extra")
                 .join(env.from_arrow(persons, timestamp="dateTime")
                       .select("name", "emailAddress", "creditCard", "city", "state", "dateTime", person_id="id"))
                 .where("bidder").equal_to("person_id"))
    items = env.from_arrow(auctions, timestamp="dateTime").select(
        "itemName", "description", "initialBid", "reserve", "expires", "seller", "category",
        auction_dateTime="dateTime")
    return (by_person.join(items).where("bidder").equal_to("seller")
            .select("bidder", "price", "channel", "url", "bid_extra", "person_id", "name", "emailAddress",
                    "creditCard", "city", "state", "itemName", "description", "initialBid", "reserve",
                    "auction_dateTime", "expires", "seller", "category"))
def _bidding_statistics(price, bidder, auction) -> dict:
    """Q15's and Q16's aggregates: the bids, distinct bidders and distinct auctions, in all and
    per price rank (``RANK_PRICES``), SQL's ``FILTER (WHERE ...)`` as ``where=``."""
    from .. import agg
    low, high = RANK_PRICES
    ranks = {"": None, "rank1_": price < low, "rank2_": (price >= low) & (price < high), "rank3_": price >= high}
    out = {f"{rank or 'total_'}bids": agg.count(where=where) for rank, where in ranks.items()}
    out |= {f"{rank or 'total_'}bidders": agg.count_distinct(bidder, where=where) for rank, where in ranks.items()}
    out |= {f"{rank or 'total_'}auctions": agg.count_distinct(auction, where=where) for rank, where in ranks.items()}
    return out


def q15(env, bids: pa.Table):
    """Nexmark Q15, bidding statistics report: a running aggregate per day (``yyyy-MM-dd``, UTC;
    the suite's ``customTime`` is the bid's ``dateTime``) of the bids, the distinct bidders and
    the distinct auctions, each in all and per price rank (``RANK_PRICES``: below 10,000, up to
    1,000,000, above; SQL's ``count(distinct bidder) FILTER (WHERE ...)`` is
    ``agg.count_distinct("bidder", where=...)``). An updating stream. Output: day, total_bids,
    rank1_bids, rank2_bids, rank3_bids, total_bidders, rank1_bidders, rank2_bidders,
    rank3_bidders, total_auctions, rank1_auctions, rank2_auctions, rank3_auctions."""
    from .. import col
    return (env.from_arrow(bids, timestamp="dateTime")
            .with_columns(day=col("dateTime").dt.strftime("%Y-%m-%d"))
            .key_by("day")
            .aggregate(**_bidding_statistics(col("price"), col("bidder"), col("auction"))))


def q16(env, bids: pa.Table):
    """Nexmark Q16, channel statistics report: Q15's statistics per channel and day, and the
    day's latest minute ``max(DATE_FORMAT(dateTime, 'HH:mm'))`` (a running ``max`` of strings).
    An updating stream. Output: channel, day, minute, then Q15's columns after ``day``."""
    from .. import agg, col
    return (env.from_arrow(bids, timestamp="dateTime")
            .with_columns(day=col("dateTime").dt.strftime("%Y-%m-%d"), minute=col("dateTime").dt.strftime("%H:%M"))
            .key_by("channel", "day")
            .aggregate(minute=agg.max("minute"), **_bidding_statistics(col("price"), col("bidder"), col("auction"))))


def q17(env, bids: pa.Table):
    """Nexmark Q17, auction statistics report: a running aggregate per auction and day
    (``yyyy-MM-dd``, UTC) of the bids, the bids of each price rank (``RANK_PRICES``: below 10,000,
    up to 1,000,000, above), and the minimum, maximum, average and total price. An updating
    stream. Output: auction, day, total_bids, rank1_bids, rank2_bids, rank3_bids, min_price,
    max_price, avg_price (float64, where Flink's BIGINT average truncates), sum_price."""
    from .. import agg, col
    price, (low, high) = col("price"), RANK_PRICES
    return (env.from_arrow(bids, timestamp="dateTime")
            .with_columns(day=col("dateTime").dt.strftime("%Y-%m-%d"))
            .key_by("auction", "day")
            .aggregate(total_bids=agg.count(), rank1_bids=agg.count(where=price < low),
                       rank2_bids=agg.count(where=(price >= low) & (price < high)),
                       rank3_bids=agg.count(where=price >= high), min_price=agg.min("price"),
                       max_price=agg.max("price"), avg_price=agg.avg("price"), sum_price=agg.sum("price")))


def q18(env, bids: pa.Table):
    """Nexmark Q18, find last bid: per bidder and auction, the bid with the latest ``dateTime``
    (ties: the later arrival), ``ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY
    dateTime DESC) <= 1``. An updating stream. Output: the bid's columns."""
    return env.from_arrow(bids, timestamp="dateTime").key_by("bidder", "auction").deduplicate(keep="last")


def q4(env, auctions: pa.Table, bids: pa.Table):
    """Nexmark Q4, average price per category: the auctions joined with the bids placed while they
    were open (a regular join on ``auction.id == bid.auction``, the filter ``bid.dateTime BETWEEN
    auction.dateTime AND auction.expires`` fused into the join's probe), the winning (maximum)
    price per auction (a running aggregate), then the average of those per category: a running
    aggregate over an updating stream, which retracts an auction's old maximum when it grows.
    Output: category, avg_final (float64, where Flink's BIGINT average truncates)."""
    from .. import agg, col
    joined = (env.from_arrow(auctions, timestamp="dateTime").select("id", "category", "dateTime", "expires")
              .join(env.from_arrow(bids, timestamp="dateTime").select("auction", "price", "dateTime"))
              .where("id").equal_to("auction")
              .filter((col("dateTime_right") >= col("dateTime")) & (col("dateTime_right") <= col("expires"))))
    final = joined.key_by("id", "category").aggregate(final=agg.max("price"))
    return final.key_by("category").aggregate(avg_final=agg.avg("final"))


def q19(env, bids: pa.Table):
    """Nexmark Q19, auction top-10 price: per auction the 10 highest bids so far, ``ROW_NUMBER()
    OVER (PARTITION BY auction ORDER BY price DESC) <= 10`` (ties: the earlier arrival). An
    updating stream. Output: the bid's columns, then ``rank``."""
    return env.from_arrow(bids, timestamp="dateTime").key_by("auction").top_n(Q19_TOP, by="price")


def q9(env, auctions: pa.Table, bids: pa.Table):
    """Nexmark Q9, winning bids: each auction joined with its bids (a regular join on
    ``auction.id == bid.auction``) placed while it was open (``bid.dateTime BETWEEN
    auction.dateTime AND auction.expires``), then per auction the highest bid, the earliest of
    equal prices: ``ROW_NUMBER() OVER (PARTITION BY id ORDER BY price DESC, bid dateTime ASC) <=
    1``. An updating stream (a new winner: ``-U`` the old row, ``+U`` the new). Output: id,
    itemName, description, initialBid, reserve, dateTime, expires, seller, category, auction,
    bidder, price, bid_dateTime, bid_extra (the suite's auction ``extra`` is not generated)."""
    from .. import col
    opened = env.from_arrow(auctions, timestamp="dateTime").select(
        "id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category")
    placed = env.from_arrow(bids, timestamp="dateTime").select("auction", "bidder", "price", "dateTime", "extra")
    bid_time = col("dateTime_right")
    return (opened.join(placed).where("id").equal_to("auction")
            .filter((bid_time >= col("dateTime")) & (bid_time <= col("expires")))
            .key_by("id").top_n(1, by=["price", "dateTime_right"], descending=[True, False])
            .select("id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller",
                    "category", "auction", "bidder", "price", bid_dateTime="dateTime_right", bid_extra="extra"))


# Every query by name, over the tables of ``generate_nexmark`` ("bid", "person", "auction"; Q13's
# side input as "side" where a caller has its own): one map for the benchmarks and the tests.
QUERIES = {
    "q0": lambda env, t: q0(env, t["bid"]),
    "q1": lambda env, t: q1(env, t["bid"]),
    "q2": lambda env, t: q2(env, t["bid"]),
    "q3": lambda env, t: q3(env, t["person"], t["auction"]),
    "q4": lambda env, t: q4(env, t["auction"], t["bid"]),
    "q5": lambda env, t: q5(env, t["bid"]),
    "q7": lambda env, t: q7(env, t["bid"]),
    "q8": lambda env, t: q8(env, t["person"], t["auction"]),
    "q9": lambda env, t: q9(env, t["auction"], t["bid"]),
    "q10": lambda env, t: q10(env, t["bid"]),
    "q11": lambda env, t: q11(env, t["bid"]),
    "q13": lambda env, t: q13(env, t["bid"], t.get("side")),
    "q14": lambda env, t: q14(env, t["bid"]),
    "q15": lambda env, t: q15(env, t["bid"]),
    "q16": lambda env, t: q16(env, t["bid"]),
    "q17": lambda env, t: q17(env, t["bid"]),
    "q18": lambda env, t: q18(env, t["bid"]),
    "q18_window": lambda env, t: q18_window(env, t["bid"]),
    "q19": lambda env, t: q19(env, t["bid"]),
    "q19_window": lambda env, t: q19_window(env, t["bid"]),
    "q20": lambda env, t: q20(env, t["bid"], t["auction"]),
    "q21": lambda env, t: q21(env, t["bid"]),
    "q22": lambda env, t: q22(env, t["bid"]),
    "q23": lambda env, t: q23(env, t["bid"], t["person"], t["auction"]),
}
