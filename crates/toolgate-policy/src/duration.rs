//! Durations written as `"30s"`, `"5m"`, `"1h30m"` or `"250ms"`.

use std::time::Duration;

/// The longest duration a policy may set (a week).
pub(crate) const MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses a duration: one or more `<integer><unit>` parts, units `ms`, `s`, `m`, `h`, `d`.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err("a duration cannot be empty".into());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("expected a number in `{text}`"));
        }
        let (number, tail) = rest.split_at(digits);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("`{number}` is too large"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let part = match unit {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            "d" => Duration::from_secs(number.saturating_mul(86_400)),
            "" => return Err(format!("`{text}` needs a unit: `ms`, `s`, `m`, `h` or `d`")),
            other => {
                return Err(format!(
                    "unknown unit `{other}` in `{text}`, expected `ms`, `s`, `m`, `h` or `d`"
                ));
            }
        };
        total = total.saturating_add(part);
        rest = tail;
    }
    if total.is_zero() {
        return Err("a duration must be longer than zero".into());
    }
    if total > MAX {
        return Err(format!("`{text}` is longer than the maximum of 7d"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse(" 2s "), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn rejects() {
        assert_eq!(
            parse("5").unwrap_err(),
            "`5` needs a unit: `ms`, `s`, `m`, `h` or `d`"
        );
        assert!(parse("5 minutes").is_err());
        assert!(parse("0s").is_err());
        assert!(parse("").is_err());
        assert!(parse("m").is_err());
        assert!(parse("8d").is_err());
        assert!(parse("99999999999999999999999s").is_err());
    }
}
