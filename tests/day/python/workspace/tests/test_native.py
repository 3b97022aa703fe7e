import pytest

native = pytest.importorskip("invoicer_native")


@pytest.mark.parametrize(
    ("amount", "expected"),
    [("2.345", "2.35"), ("2.355", "2.36"), ("-1.005", "-1.01"), ("10", "10.00")],
)
def test_round_minor_matches_decimal_half_up(amount, expected):
    assert native.round_minor(amount, 2) == expected


def test_luhn_check():
    assert native.luhn_check("79927398713")
    assert not native.luhn_check("79927398710")
