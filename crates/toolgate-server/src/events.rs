//! The audit log, read back: `GET /api/audit` (JSON) and `GET /api/events` (server-sent
//! events, resumable with `Last-Event-ID`).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;

use crate::body::{Path, Query};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::stream;
use serde::Deserialize;
use toolgate_store::{EventFilter, EventRecord, JsonText};

use crate::error::ApiError;
use crate::state::AppState;

/// The most events one page of the audit log returns.
pub const MAX_PAGE: u32 = 1000;

/// A page size given as `name` (`limit`, `last`): 1 to [`MAX_PAGE`], or none.
pub(crate) fn page_size(value: Option<u32>, name: &str) -> Result<Option<u32>, ApiError> {
    match value {
        Some(n) if !(1..=MAX_PAGE).contains(&n) => Err(ApiError::bad_request(
            "bad_limit",
            format!("`{name}` is 1 to {MAX_PAGE}"),
        )),
        _ => Ok(value),
    }
}

/// Filters of the audit log and the event stream (a parameter not among them is refused: a
/// misspelt filter would otherwise return every event).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogQuery {
    /// Events after this sequence number.
    after: Option<i64>,
    /// At most this many (audit only; at most 1,000).
    limit: Option<u32>,
    /// The newest this many instead, newest first (audit only; at most 1,000).
    last: Option<u32>,
    session: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    request_id: Option<String>,
    since: Option<String>,
}

impl LogQuery {
    fn filter(&self, session: Option<String>) -> Result<EventFilter, ApiError> {
        if self.after.is_some_and(|after| after < 0) {
            return Err(ApiError::bad_request(
                "bad_after",
                "`after` is a sequence number (0 or more)",
            ));
        }
        // Not held to the rules of names a client gives: a hosted agent's session may be
        // named anything.
        crate::body::not_empty(
            self.session.as_deref(),
            "bad_session",
            "`session` names a session; leave it out for every session's events",
        )?;
        if session.is_some() && self.session.is_some() {
            return Err(ApiError::bad_request(
                "bad_session",
                "the session is named by the path; leave `session` out",
            ));
        }
        crate::body::not_empty(
            self.request_id.as_deref(),
            "bad_request_id",
            "`request_id` names a request; leave it out for every request's events",
        )?;
        let since = match &self.since {
            None => None,
            Some(text) => Some(since(text).ok_or_else(|| {
                ApiError::bad_request(
                    "bad_since",
                    "`since` is an RFC 3339 time, like 2026-11-22T10:00:00Z or \
                     2026-11-22T11:00:00%2B01:00 (a `+` in a URL is a space unless written \
                     `%2B`; a space before the offset is read as `+`)",
                )
            })?),
        };
        let kinds: Vec<String> = self
            .kind
            .iter()
            .flat_map(|k| k.split(','))
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        // `type=` (or `type=,`) is not "every type": refused as an empty `session=` is.
        if self.kind.is_some() && kinds.is_empty() {
            return Err(ApiError::bad_request(
                "bad_type",
                "`type` names event types, separated by commas; leave it out for every type",
            ));
        }
        Ok(EventFilter {
            session: session.or_else(|| self.session.clone()),
            kinds,
            request_id: self.request_id.clone(),
            since,
        })
    }
}

/// 10000-01-01T00:00:00Z, in seconds since 1970: the first time RFC 3339 cannot write.
const LAST_WRITABLE_SECOND: u64 = 253_402_300_800;

/// `since` as the log writes times (UTC, microseconds, fixed width: they compare as text), from
/// an RFC 3339 time with any offset; `None` when it is not one. A time before 1970 is every
/// event's lower bound (the epoch), and one past what the log can write no event's.
pub(crate) fn since(text: &str) -> Option<String> {
    let text = text.trim();
    // The offset: `Z`, or `+hh:mm` / `-hh:mm` after the time of day.
    let (local, offset_seconds) = if let Some(local) = text.strip_suffix(['Z', 'z']) {
        (local, 0i64)
    } else {
        let split = text.len().checked_sub(6)?;
        let (local, offset) = (text.get(..split)?, text.get(split..)?);
        let sign = match offset.get(..1)? {
            // A `+` written as is in a URL arrives as a space.
            "+" | " " => 1,
            "-" => -1,
            _ => return None,
        };
        if offset.get(3..4)? != ":" {
            return None;
        }
        let (hours, minutes) = (number(offset, 1..3)?, number(offset, 4..6)?);
        if hours > 23 || minutes > 59 {
            return None;
        }
        (local, sign * (hours * 3600 + minutes * 60))
    };
    // `YYYY-MM-DDThh:mm:ss[.frac]`.
    let separators = [(4, "-"), (7, "-"), (13, ":"), (16, ":")];
    if separators
        .iter()
        .any(|&(at, separator)| local.get(at..at + 1) != Some(separator))
        || !matches!(local.get(10..11), Some("T" | "t"))
    {
        return None;
    }
    let (year, month, day) = (
        number(local, 0..4)?,
        number(local, 5..7)?,
        number(local, 8..10)?,
    );
    let (hour, minute, second) = (
        number(local, 11..13)?,
        number(local, 14..16)?,
        number(local, 17..19)?,
    );
    let micros = match local.get(19..)? {
        "" => 0,
        fraction => {
            let digits = fraction.strip_prefix('.')?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // The first six digits (the log's precision), the rest dropped.
            digits
                .bytes()
                .chain(std::iter::repeat(b'0'))
                .take(6)
                .fold(0u32, |micros, digit| micros * 10 + u32::from(digit - b'0'))
        }
    };
    // A leap second (`:60`) is the next second's start, as on a POSIX clock.
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_seconds;
    let Ok(seconds) = u64::try_from(seconds) else {
        return Some(humantime::format_rfc3339_micros(std::time::UNIX_EPOCH).to_string());
    };
    if seconds >= LAST_WRITABLE_SECOND {
        // The last microsecond the log can write: no event is at or after it.
        return Some("9999-12-31T23:59:59.999999Z".to_owned());
    }
    let time = std::time::UNIX_EPOCH + Duration::new(seconds, micros * 1000);
    Some(humantime::format_rfc3339_micros(time).to_string())
}

/// The decimal number written with exactly the digits at `range` of `text`.
fn number(text: &str, range: std::ops::Range<usize>) -> Option<i64> {
    let digits = text.get(range)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative before it):
/// the days of whole 400-year eras, then of the years, months and days in the last one, with
/// the year taken to start in March (so February's length comes last).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719,468: the days from 0000-03-01 to 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

/// `GET /api/audit`: a page of the audit log, oldest first; `next` is where the next page
/// starts.
pub(crate) async fn audit(
    State(state): State<AppState>,
    Query(query): Query<LogQuery>,
) -> Result<Json<Page>, ApiError> {
    let filter = query.filter(None)?;
    let (limit, last) = (
        page_size(query.limit, "limit")?,
        page_size(query.last, "last")?,
    );
    if limit.is_some() && last.is_some() {
        return Err(ApiError::bad_request(
            "bad_limit",
            "send `limit` (oldest first) or `last` (newest first), not both",
        ));
    }
    if last.is_some() && query.after.is_some() {
        return Err(ApiError::bad_request(
            "bad_limit",
            "`last` is the newest events, not those after a number: send `after` with `limit`",
        ));
    }
    if let Some(last) = last {
        let events = state.store().latest(&filter, last).await?;
        return Ok(Json(Page {
            events: served(&events)?,
            next: None,
            order: Some("newest_first"),
        }));
    }
    let limit = limit.unwrap_or(100);
    let events = state
        .store()
        .events_after(query.after.unwrap_or(0), &filter, limit)
        .await?;
    let next = events.last().map(|e| e.seq);
    Ok(Json(Page {
        events: served(&events)?,
        next: Some(next),
        order: None,
    }))
}

/// A page of the audit log: the events as stored, each with its number.
#[derive(serde::Serialize)]
pub(crate) struct Page {
    events: Vec<JsonText>,
    /// Oldest first: the last event's number (`null` when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Option<i64>>,
    /// Newest first: says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<&'static str>,
}

fn served(events: &[EventRecord]) -> Result<Vec<JsonText>, ApiError> {
    Ok(events
        .iter()
        .map(EventRecord::served_json)
        .collect::<Result<_, _>>()?)
}

/// A stream's parameters are the audit log's but its page sizes: an unknown one's error says
/// what a stream takes.
fn streams_take(mut error: ApiError) -> ApiError {
    if error.code == "unknown_parameter" {
        error.message = error.message.replace("`limit`, `last`, ", "");
    }
    error
}

/// `GET /api/events`: every event, live.
pub(crate) async fn all(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<LogQuery>, ApiError>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(query) = query.map_err(streams_take)?;
    stream_events(state, &headers, &query, None).await
}

/// `GET /api/sessions/{id}/events`: one session's events, live; 404 for an unknown session.
pub(crate) async fn of_session(
    State(state): State<AppState>,
    Path(session): Path<String>,
    headers: HeaderMap,
    query: Result<Query<LogQuery>, ApiError>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(query) = query.map_err(streams_take)?;
    if state.store().session(&session).await?.is_none() {
        return Err(ApiError::not_found(format!("no session `{session}`")));
    }
    stream_events(state, &headers, &query, Some(session)).await
}

struct Cursor {
    state: AppState,
    filter: EventFilter,
    after: i64,
    buffer: std::collections::VecDeque<EventRecord>,
    changes: tokio::sync::watch::Receiver<i64>,
}

async fn stream_events(
    state: AppState,
    headers: &HeaderMap,
    query: &LogQuery,
    session: Option<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, ApiError> {
    if headers.get_all("last-event-id").iter().nth(1).is_some() {
        return Err(ApiError::bad_request(
            "duplicate_header",
            "the `last-event-id` header is sent more than once",
        ));
    }
    let resume = match headers.get("last-event-id") {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|seq| *seq >= 0)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "bad_last_event_id",
                        "`Last-Event-ID` is a sequence number (0 or more)",
                    )
                })?,
        ),
        None => None,
    };
    if query.limit.is_some() || query.last.is_some() {
        return Err(ApiError::bad_request(
            "bad_limit",
            "a stream has no `limit` or `last`: it starts after `after` (or `Last-Event-ID`) \
             and goes on; `GET /api/audit?last=N` reads the newest N",
        ));
    }
    let filter = query.filter(session)?;
    let after = resume.or(query.after).unwrap_or(0);
    // A number past the log's end came from another log (a backup restored since, another data
    // directory): what it would skip is said, not silently left out.
    if after > 0 {
        let last = state.store().last_seq().await?;
        if after > last {
            return Err(ApiError::conflict(
                "ahead_of_log",
                format!(
                    "the log ends at event {last}, before {after}: that number is from another \
                     log (a backup restored since, or another data directory); start again \
                     from `after={last}`, or 0 for the whole log"
                ),
            ));
        }
    }
    let changes = state.inner.last_seq.subscribe();
    let cursor = Cursor {
        after,
        state,
        filter,
        buffer: std::collections::VecDeque::new(),
        changes,
    };
    let events = stream::unfold(cursor, |mut cursor| async move {
        loop {
            // The daemon is stopping: the client resumes from its last id elsewhere or later.
            if cursor.state.inner.closing.is_cancelled() {
                return None;
            }
            if let Some(record) = cursor.buffer.pop_front() {
                cursor.after = record.seq;
                let event = Event::default()
                    .id(record.seq.to_string())
                    .event(record.kind.clone())
                    .data(record.served());
                return Some((Ok(event), cursor));
            }
            // Mark the current position seen before reading, so nothing written after the
            // read is missed.
            cursor.changes.borrow_and_update();
            match cursor
                .state
                .store()
                .events_after(cursor.after, &cursor.filter, 256)
                .await
            {
                Ok(records) if !records.is_empty() => cursor.buffer.extend(records),
                Ok(_) => {
                    let closing = cursor.state.inner.closing.clone();
                    tokio::select! {
                        changed = cursor.changes.changed() => if changed.is_err() {
                            return None;
                        },
                        () = closing.cancelled() => return None,
                    }
                }
                Err(_) => {
                    // The store is failing: end the stream; the client resumes from its last id.
                    return None;
                }
            }
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )]

    use std::time::Duration;

    use super::{days_from_civil, days_in_month, since};

    #[test]
    fn since_accepts_rfc_3339_with_any_offset_and_writes_it_as_the_log_does() {
        for (given, expected) in [
            ("2026-11-22T08:42:33Z", "2026-11-22T08:42:33.000000Z"),
            ("2026-11-22t08:42:33z", "2026-11-22T08:42:33.000000Z"),
            ("2026-11-22T08:42:33.45Z", "2026-11-22T08:42:33.450000Z"),
            ("2026-11-22T09:42:33+01:00", "2026-11-22T08:42:33.000000Z"),
            ("2026-11-22T03:42:33.5-05:00", "2026-11-22T08:42:33.500000Z"),
            ("2026-11-22T00:30:00+01:00", "2026-11-21T23:30:00.000000Z"),
            ("2026-11-22T08:42:33+00:00", "2026-11-22T08:42:33.000000Z"),
            ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
            ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000000Z"),
            ("2000-02-29T12:00:00Z", "2000-02-29T12:00:00.000000Z"),
            (
                "2024-02-29T23:59:59.9999999Z",
                "2024-02-29T23:59:59.999999Z",
            ),
            ("2016-12-31T23:59:60Z", "2017-01-01T00:00:00.000000Z"),
            ("1969-12-31T23:00:00-05:00", "1970-01-01T04:00:00.000000Z"),
            // Before 1970 every event is after it; past 9999 none is.
            ("1970-01-01T00:00:00+01:00", "1970-01-01T00:00:00.000000Z"),
            ("1969-07-20T20:17:40Z", "1970-01-01T00:00:00.000000Z"),
            ("0000-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
            ("9999-12-31T23:59:59-00:01", "9999-12-31T23:59:59.999999Z"),
        ] {
            assert_eq!(since(given).as_deref(), Some(expected), "{given}");
        }
        // Fixed width: compared as text with the log's times, an event in the same second
        // (after the whole second) is not before it.
        let bound = since("2026-11-22T08:42:33Z").unwrap();
        assert!("2026-11-22T08:42:33.450840Z" >= bound.as_str());
        assert!("2026-11-22T08:42:32.999999Z" < bound.as_str());
    }

    #[test]
    fn days_from_civil_agrees_with_humantime_every_day_from_1970_to_2200() {
        let mut day = std::time::UNIX_EPOCH;
        for count in 0..84_000i64 {
            let text = humantime::format_rfc3339(day).to_string();
            let (y, m, d) = (
                text[0..4].parse().unwrap(),
                text[5..7].parse().unwrap(),
                text[8..10].parse().unwrap(),
            );
            assert_eq!(days_from_civil(y, m, d), count, "{text}");
            assert!(d <= days_in_month(y, m), "{text}");
            day += Duration::from_secs(86_400);
        }
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(1900, 3, 1), -25_508);
    }

    #[test]
    fn since_refuses_what_is_not_rfc_3339() {
        for given in [
            "",
            "2026-11-22",
            "2026-11-22T08:42:33",
            "2026-11-22 08:42:33Z",
            "2026-11-22T08:42:33+1:00",
            "2026-11-22T08:42:33+24:00",
            "2026-11-22T08:42:33*01:00",
            "2026-13-22T08:42:33Z",
            "yesterday",
            "2026-11-22T08:42:33Zjunk",
            "é026-11-22T08:42:33Z",
            "+01:00",
            // Dates that are not.
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-11-00T00:00:00Z",
            "2026-11-22T24:00:00Z",
            "2026-11-22T08:60:00Z",
            "2026-11-22T08:42:61Z",
            "-026-11-22T08:42:33Z",
            "2026-11-22T08:42:33+01:0x",
            // Offsets and fractions that are not digits.
            "2026-11-22T08:42:33++1:00",
            "2026-11-22T08:42:33+-1:00",
            "2026-11-22T08:42:33.Z",
        ] {
            assert_eq!(since(given), None, "{given:?}");
        }
    }
}
