"""Every row norm by blocks (``counters.root_blocks``) is the row recursion's (``root_rows._row_norms``).

Both sum the same terms in other orders; measured differences are below 2e-14 at these horizons, so 1e-12 relative
is rounding. Blocks of 7, 512 and the default length cover a horizon that is and is not a multiple of the block,
blocks of one step, a last block of one step, and a block whose own columns span three tiles of the recursion.
"""

import numpy as np
import pytest

from dpstream.counters.factorisation import normalised_unit_variances
from dpstream.counters.root_blocks import block_length, row_norms_by_blocks
from dpstream.counters.root_rows import ROW_TILE


@pytest.mark.parametrize(("horizon", "block"), [(1, None), (3, 2), (9, 1), (1000, 7), (5000, 512), (5121, 512),
                                                (2**13, None), (5000, 2 * ROW_TILE + 5)])
def test_every_row_by_blocks_is_the_recursions_row(horizon, block):
    np.testing.assert_allclose(row_norms_by_blocks(horizon, block), normalised_unit_variances(horizon), rtol=1e-12,
                               atol=0)


def test_the_block_is_the_power_of_two_at_or_above_the_root_of_t_log_t():
    assert [block_length(2**k) for k in (10, 16, 20, 22, 24)] == [128, 1024, 8192, 16384, 32768]
    assert block_length(1) == 2


def test_progress_is_told_after_every_block_up_to_the_horizon():
    told: list[tuple[int, int]] = []
    row_norms_by_blocks(10, 4, progress=lambda done, horizon: told.append((done, horizon)))
    assert told == [(4, 10), (8, 10), (10, 10)]


@pytest.mark.parametrize(("horizon", "block", "message"), [(0, None, "horizon 0; allowed: >= 1"),
                                                           (5, 0, "block 0; allowed: >= 1")])
def test_a_horizon_or_block_below_one_is_refused(horizon, block, message):
    with pytest.raises(ValueError, match=message):
        row_norms_by_blocks(horizon, block)
