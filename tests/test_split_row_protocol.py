"""CPU tier: a model of the streamed split_row's producer/consumer protocol cannot deadlock.

csrc/softmax/softmax_split_row_stream_sm90a.cu, per block of a persistent grid: a producer takes job
tickets (row, slice) in order and pushes each job's chunks into an S-stage ring, pass 1 then pass 2;
the consumers fold pass 1, publish the slice's statistics, wait until every slice of the row has
published (the exchange), then read pass 2. With several slices per row the producer takes its next
ticket only once its consumers are past the job's exchange. The workspace resets itself: the draw of
the launch's last ticket zeroes the ticket counter; each slice publishes once, into its own (row, slice)
slot (2b9e492; a per-row arrival counter before), modelled here as a count per row of the slots set; each
block's producer counts the block's exit when it draws its end ticket (its consumers are then past
their last exchange), and the consumers of the last block out zero every slot and the exit
counter when they reach the end marker. This model runs the blocks under random interleavings (one
move per agent per round, or run-to-block: each agent moves as far as it can before the next one) and
checks that every block reaches the end of its stream with every counter back at zero, and that no row
counter is touched after the reset. The negative control drops that wait, as v10 did: a producer whose
slice fits the ring can then queue the same row's next slice behind the one waiting for it, and some
schedule deadlocks, so the test can fail. (A model of the design, not of the PTX: a change to the
kernel's stream order or exchange belongs here too.)
"""
import random
import unittest

GRID = 132


def run_protocol(rows, slices, chunks_per_slice, stages, seed, wait_for_exchange=True, run_to_block=False):
    """True when every block finishes; False when no agent can move (deadlock). AssertionError when a
    counter is touched after its reset or left nonzero. Each round visits the agents in a random order,
    one move each, or (run_to_block) as many moves as each can make."""
    rnd = random.Random(seed)
    jobs, next_ticket = rows * slices, 0
    arrivals, exits, reset = [0] * rows, 0, False
    last_out = None  # the block whose producer counted the launch's last exit
    exchanged = set()  # (block, row): that block's consumers are past the row's exchange
    rings = [[] for _ in range(GRID)]
    queued = [[] for _ in range(GRID)]  # the producer's items not yet in the ring
    exchanges_passed = [0] * GRID       # the `exchanged` mbarrier's completed phases
    jobs_taken = [0] * GRID
    producer_done, finished = [False] * GRID, [False] * GRID

    def step(agent):
        """One move of one agent (a block's producer thread or its consumer warps); False if it cannot move."""
        nonlocal next_ticket, arrivals, exits, reset, last_out
        b = agent % GRID
        if agent < GRID:  # the producer thread of block b
            if producer_done[b]:
                return False
            if not queued[b]:
                if wait_for_exchange and slices > 1 and exchanges_passed[b] < jobs_taken[b]:
                    return False
                ticket, next_ticket = next_ticket, next_ticket + 1
                if ticket == jobs + GRID - 1:  # the last ticket the launch hands out
                    next_ticket = 0
                if ticket >= jobs:
                    queued[b] = ["end"]
                    if slices > 1:  # count_exit: this block is done with the workspace
                        exits += 1
                        if exits == GRID:
                            last_out = b
                else:
                    job = divmod(ticket, slices)
                    queued[b] = [(job, p, i) for p in (0, 1) for i in range(chunks_per_slice)]
                    jobs_taken[b] += 1
            if len(rings[b]) >= stages:
                return False
            item = queued[b].pop(0)
            rings[b].append(item)
            producer_done[b] = item == "end"
            return True
        else:  # the consumer warps of block b
            if finished[b] or not rings[b]:
                return False
            item = rings[b][0]
            if item == "end":
                finished[b] = True
                if b == last_out:  # zero_workspace
                    arrivals, exits, reset = [0] * rows, 0, True
            else:
                (row, _), pass_, i = item
                exchange = slices > 1
                if exchange and pass_ == 1 and i == 0 and (b, row) not in exchanged:
                    assert not reset, f"row {row}: exchange after the reset"
                    if arrivals[row] < slices:
                        return False  # the exchange: wait for the row's other slices
                    exchanged.add((b, row))
                    exchanges_passed[b] += 1
                if exchange and pass_ == 0 and i == chunks_per_slice - 1:
                    assert not reset, f"row {row}: arrival after the reset"
                    arrivals[row] += 1  # publish this slice's statistics
            rings[b].pop(0)
            return True

    while not all(finished):
        progressed = False
        for agent in rnd.sample(range(2 * GRID), 2 * GRID):
            while step(agent):
                progressed = True
                if not run_to_block:
                    break
        if not progressed:
            return False
    assert next_ticket == 0, "the ticket counter was not reset"
    assert not any(arrivals) and exits == 0, "row or exit counters left nonzero"
    assert slices == 1 or reset, "the workspace was never reset"
    return True


class SplitRowProtocolTest(unittest.TestCase):
    CASES = [  # rows, slices, chunks per slice, ring stages (6 since the forward's 32 KiB chunks; forward 12 before)
        (5, 27, 1, 12),    # 5x70000 in v13's layout (18 slices of 16 KiB granules now): 135 tickets, short slices
        (37, 4, 8, 12),    # fp32 37x131072 forward: 148 tickets, 8-chunk slices
        (64, 6, 6, 6),     # session 6's hang: 1024x131072 backward at 6 slices, slice = ring
        (8, 16, 16, 12),   # fp32 32x1M forward: slices longer than the ring
        (1, GRID, 2, 12),  # one row over every block
        (32, 16, 16, 12),  # fp32 32x1M forward since slices are at most 256 KiB: 16 slices, rows straddle rounds
        (4, 128, 8, 6),    # fp32 4x4M backward since then: 128 slices of 8 chunks per operand
        (300, 1, 3, 6),    # one slice per row: no exchange
    ]

    def test_every_block_reaches_the_end(self):
        for rows, slices, chunks, stages in self.CASES:
            for seed in range(3):
                for run_to_block in (False, True):
                    with self.subTest(rows=rows, slices=slices, chunks=chunks, stages=stages, seed=seed,
                                      run_to_block=run_to_block):
                        self.assertTrue(run_protocol(rows, slices, chunks, stages, seed, run_to_block=run_to_block))

    def test_negative_control_without_the_exchange_wait_fails(self):
        """Without the wait some schedule deadlocks, or (the exit then counted before the block's last
        exchange) resets the workspace under a row still exchanging. Run-to-block schedules, where a producer
        runs as far ahead as its ring lets it, catch it in every seed (random one-move schedules in about half)."""
        def outcome(seed, run_to_block):
            try:
                return run_protocol(5, 27, 1, 12, seed, wait_for_exchange=False, run_to_block=run_to_block)
            except AssertionError:
                return False
        for run_to_block in (False, True):
            outcomes = [outcome(seed, run_to_block) for seed in range(10)]
            with self.subTest(run_to_block=run_to_block):
                self.assertIn(False, outcomes,
                              "every schedule finished cleanly without the wait: the model cannot catch the bug")


if __name__ == "__main__":
    unittest.main()
