use std::str::FromStr;

use rust_decimal::{Decimal, Error, RoundingStrategy};

pub fn round_str(amount: &str, scale: u32) -> Result<String, Error> {
    let value = Decimal::from_str(amount)?;
    let rounded = value.round_dp_with_strategy(scale, RoundingStrategy::MidpointNearestEven);
    Ok(format!("{rounded:.prec$}", prec = scale as usize))
}

pub fn luhn(number: &str) -> bool {
    let digits: Option<Vec<u32>> = number.chars().rev().map(|c| c.to_digit(10)).collect();
    let Some(digits) = digits else { return false };
    let sum: u32 = digits
        .iter()
        .enumerate()
        .map(|(i, &d)| if i % 2 == 1 { let x = d * 2; if x > 9 { x - 9 } else { x } } else { d })
        .sum();
    !digits.is_empty() && sum % 10 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_two_places() {
        assert_eq!(round_str("2.344", 2).unwrap(), "2.34");
        assert_eq!(round_str("10", 2).unwrap(), "10.00");
    }

    #[test]
    fn luhn_known_values() {
        assert!(luhn("79927398713"));
        assert!(!luhn("79927398710"));
    }
}
