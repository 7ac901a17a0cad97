"""Presets: numbers against their sources, address mapping, unit conversion, validation."""

from fractions import Fraction

import pytest

from hw.hbm_model.presets import PRESETS, HbmTiming, get_preset


def test_hbm2_numbers_are_dramsim3s():
    # ../shared/data/hbm_parameters.md, DRAMSim3 HBM2_8Gb_x128 column
    p = PRESETS["HBM2"]
    t = p.timing
    assert (p.channels, p.bank_groups, p.banks_per_group, p.rows) == (8, 4, 4, 32768)
    assert (t.tRCD, t.tCL, t.tWL, t.tRP, t.tRAS, t.tRC) == (14, 14, 4, 14, 34, 48)
    assert (t.tCCD_S, t.tCCD_L, t.tRRD_S, t.tRRD_L, t.tFAW) == (1, 2, 4, 6, 30)
    assert (t.tWR, t.tWTR_S, t.tWTR_L, t.tRTP, t.tRTRS, t.tREFI, t.tRFC) == (16, 6, 8, 5, 2, 3900, 260)
    assert p.capacity_bytes == 8 << 30
    assert p.peak_gbps == pytest.approx(256.0)


def test_hbm3_numbers_are_ramulators():
    p = PRESETS["HBM3"]
    t = p.timing
    assert (p.channels, p.banks, p.rows, p.columns * p.access_bytes) == (32, 32, 16384, 1024)
    assert (t.tRCD, t.tCL, t.tWL, t.tRP, t.tRAS, t.tRC) == (31, 20, 10, 26, 45, 72)
    assert (t.tRRD_S, t.tRRD_L, t.tFAW, t.tWR, t.tWTR_S, t.tWTR_L, t.tRTP) == (4, 5, 24, 33, 7, 10, 9)
    assert (t.tREFI, t.tRFC) == (6240, 560)
    # 64 B on a 32-bit pseudo-channel at 6.4 Gb/s per pin: 16 B per 0.625-ns tCK -> 4 tCK
    assert t.tBURST * p.bus_bits * 4 // 8 == p.access_bytes
    # Ramulator's tRTW = 20 with nBL = 2: tCL + 2 + tRTRS - tWL
    assert t.tCL + 2 + t.tRTRS - t.tWL == 20
    assert p.capacity_bytes == 16 << 30
    assert p.peak_gbps == pytest.approx(819.2)


def test_hbm2_field_bits_match_dramsim3_mapping():
    # hbm_parameters.md: [5:0] offset, [10:6] column, [13:11] channel, [15:14] bank,
    # [17:16] bank group, [32:18] row
    fb = PRESETS["HBM2"].field_bits()
    assert fb == {"offset": (0, 6), "column": (6, 5), "channel": (11, 3), "bank": (14, 2),
                  "bank_group": (16, 2), "rank": (18, 0), "row": (18, 15)}


def test_decode_known_addresses():
    p = PRESETS["HBM2"]
    # row 0x1234, bank group 2, bank 3, channel 5, column 17, offset 9
    addr = (0x1234 << 18) | (2 << 16) | (3 << 14) | (5 << 11) | (17 << 6) | 9
    assert p.decode(addr) == (5, 2, 3, 0x1234, 17)
    assert p.decode(0x12345678) == (2, 0, 1, 1165, 25)
    assert p.decode(p.capacity_bytes + 64) == p.decode(64)       # bits above the row ignored
    h = PRESETS["HBM3"]
    # rorababgchco: [9:6] column, [14:10] channel, [17:15] bank group (MSB = SID), [19:18] bank
    addr = (77 << 20) | (1 << 18) | (6 << 15) | (31 << 10) | (15 << 6)
    assert h.decode(addr) == (31, 6, 1, 77, 15)
    assert h.encode(31, 6, 1, 77, 15) == addr


def test_unit_timing_rounds_up():
    p = PRESETS["HBM2"].replace(clock_ratio=Fraction(3, 2))
    u = p.unit_timing()
    assert (u.tRCD, u.tCL, u.tWL, u.tBURST, u.tRTRS, u.tFAW) == (10, 10, 3, 2, 2, 20)
    assert p.unit_cycle_ns == pytest.approx(1.5)
    # peak per unit cycle: 8 channels x 64 B / max(tBURST, tCCD_S) = 512 / 2
    assert p.peak_bytes_per_cycle == 256
    assert PRESETS["HBM2"].unit_timing() == PRESETS["HBM2"].timing


def test_get_preset_error():
    assert get_preset("HBM3") is PRESETS["HBM3"]
    with pytest.raises(ValueError, match=r"^preset must be one of HBM2, HBM3, simple, not 'HBM4'$"):
        get_preset("HBM4")


@pytest.mark.parametrize("changes, message", [
    ({"channels": 6}, "channels must be a power of two (the address mapping slices bits), not 6"),
    ({"columns": 0}, "columns must be a power of two (the address mapping slices bits), not 0"),
    ({"queue_depth": 0}, "queue_depth must be a positive integer, not 0"),
    ({"page_policy": "adaptive"}, "page_policy must be 'open' or 'closed', not 'adaptive'"),
    ({"address_mapping": "rorarabgbachco"},
     "address_mapping 'rorarabgbachco' must contain 'ra' at most once, not 2 times"),
    ({"address_mapping": "robgbachcoco"},
     "address_mapping 'robgbachcoco' must contain 'co' exactly once, not 2 times"),
    ({"address_mapping": "robgbach"}, "address_mapping 'robgbach' must contain 'co' exactly once, not 0 times"),
    ({"address_mapping": "robgbachxx"}, "address_mapping 'robgbachxx' has an unknown field 'xx' (fields: ro ra bg ba ch co)"),
    ({"clock_ratio": 0.5}, "clock_ratio must be a positive fractions.Fraction (f_mem / f_unit), not 0.5"),
    ({"fixed_latency": 0}, "fixed_latency must be None or a positive integer, not 0"),
])
def test_preset_validation(changes, message):
    with pytest.raises(ValueError) as e:
        PRESETS["HBM2"].replace(**changes)
    assert str(e.value) == message


def test_rank_field_is_optional():
    p = PRESETS["HBM2"].replace(address_mapping="robgbachco")
    fb, ref = p.field_bits(), PRESETS["HBM2"].field_bits()
    assert fb["rank"][1] == 0
    assert {k: v for k, v in fb.items() if k != "rank"} == {k: v for k, v in ref.items() if k != "rank"}


def test_timing_validation():
    with pytest.raises(ValueError) as e:
        PRESETS["HBM2"].timing.replace(tRCD=0)
    assert str(e.value) == "tRCD must be a positive integer (cycles), not 0"
    with pytest.raises(ValueError) as e:
        HbmTiming(**{**PRESETS["HBM2"].timing.__dict__, "tRTRS": -1})
    assert str(e.value) == "tRTRS must be a non-negative integer (cycles), not -1"
    with pytest.raises(ValueError) as e:
        PRESETS["HBM2"].replace(timing=PRESETS["HBM2"].timing.replace(tREFI=200))
    assert str(e.value) == "tREFI must exceed tRFC, not tREFI=200 with tRFC=260"


def test_encode_range_error():
    with pytest.raises(ValueError) as e:
        PRESETS["HBM2"].encode(8, 0, 0, 0, 0)
    assert str(e.value) == "channel must be in [0, 8), not 8"
    with pytest.raises(ValueError) as e:
        PRESETS["HBM2"].decode(-64)
    assert str(e.value) == "addr must be a non-negative integer byte address, not -64"
