//! The connection layer under the API: accepted sockets, and the answers HTTP itself gives.
//!
//! hyper refuses a request it cannot parse (a malformed line, an invalid length, a target over
//! 64 KiB, more than 100 headers, a head larger than its buffer) before any route or middleware
//! sees it, with an empty body. Every error the daemon gives is JSON, so the socket is wrapped:
//! a response that is exactly hyper's refusal — a 4xx/5xx status line followed by only
//! `connection: close`, `content-length: 0` and `date` — is replaced, as it is written, by the
//! same status with a JSON error body and the daemon's usual headers. Routes never produce that
//! shape (their errors all carry a JSON body), and response bodies never contain a bare CRLF
//! head, so nothing else is touched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Accepts connections for the API: `TCP_NODELAY` (event streams send small writes), and
/// hyper's own refusals answered in JSON.
#[derive(Debug)]
pub(crate) struct Listener(pub(crate) TcpListener);

impl axum::serve::Listener for Listener {
    type Io = JsonRefusals<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, address) = axum::serve::Listener::accept(&mut self.0).await;
        // Best effort: a socket that refuses the option still works, only slower.
        let _ = stream.set_nodelay(true);
        (JsonRefusals::new(stream), address)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The first bytes an HTTP/2 client with prior knowledge sends (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Answers a client that opens with HTTP/2's preface (prior knowledge: `curl --http2-prior-
/// knowledge`, gRPC-style clients) the way HTTP/2 says a server that needs HTTP/1.1 does: an
/// empty SETTINGS frame, then GOAWAY with `HTTP_1_1_REQUIRED` and a JSON body as its debug
/// data, and closes. Anything else is left to hyper, which would otherwise close such a
/// connection without a word: every HTTP/1.1 request differs from the preface by its second
/// byte at the latest, so a first look at what has arrived (a peek) settles nearly every
/// connection; only while what arrived is a part of the preface are bytes read, and those are
/// handed to hyper first. All of it within `wait`: a connection that sends nothing, or part of
/// the preface and no more, is closed then, as hyper closes a head that does not arrive.
/// Returns whether the connection is done with.
pub(crate) async fn refused_http2(
    stream: &mut JsonRefusals<TcpStream>,
    wait: std::time::Duration,
) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let looked = tokio::time::timeout(wait, async {
        let mut seen = [0u8; HTTP2_PREFACE.len()];
        let n = stream.inner.peek(&mut seen).await?;
        let arrived = seen.get(..n).unwrap_or_default();
        if n == 0 {
            return Ok(Look::Closed);
        }
        if !HTTP2_PREFACE.starts_with(arrived) {
            return Ok(Look::Http1);
        }
        // Part of the preface, or all of it: read until it is all there, or is not the preface.
        let mut read = Vec::with_capacity(HTTP2_PREFACE.len());
        while read.len() < HTTP2_PREFACE.len() {
            let mut more = [0u8; HTTP2_PREFACE.len()];
            let want = HTTP2_PREFACE.len() - read.len();
            let n = stream
                .inner
                .read(more.get_mut(..want).unwrap_or_default())
                .await?;
            if n == 0 {
                return Ok(Look::Closed);
            }
            read.extend_from_slice(more.get(..n).unwrap_or_default());
            if !HTTP2_PREFACE.starts_with(&read) {
                stream.replay = read;
                return Ok(Look::Http1);
            }
        }
        Ok::<Look, io::Error>(Look::Http2)
    })
    .await;
    match looked {
        Ok(Ok(Look::Http1)) => false,
        // Broken: hyper says so (it reads the same error).
        Ok(Err(_)) => false,
        Ok(Ok(Look::Closed)) | Err(_) => true,
        Ok(Ok(Look::Http2)) => {
            let body = serde_json::json!({"error": {
                "code": "http2_unsupported",
                "message": "this daemon speaks HTTP/1.1 only: send requests without HTTP/2 prior knowledge",
            }})
            .to_string();
            let mut frames = Vec::with_capacity(body.len() + 26);
            // SETTINGS (type 4), empty, on stream 0: a server's preface.
            frames.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
            // GOAWAY (type 7) on stream 0: no stream processed, HTTP_1_1_REQUIRED (0xd).
            let length = u32::try_from(8 + body.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes();
            frames.extend_from_slice(&[length[1], length[2], length[3], 7, 0, 0, 0, 0, 0]);
            frames.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x0d]);
            frames.extend_from_slice(body.as_bytes());
            let said = tokio::time::timeout(wait, async {
                stream.inner.write_all(&frames).await?;
                stream.inner.shutdown().await?;
                // What the client sent after its preface is read (at most 64 KiB, a second),
                // so closing does not reset the connection and drop the GOAWAY unread.
                let mut sink = [0u8; 4096];
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
                    let mut left = 64usize << 10;
                    while left > 0 {
                        match stream.inner.read(&mut sink).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => left = left.saturating_sub(n),
                        }
                    }
                })
                .await;
                Ok::<(), io::Error>(())
            })
            .await;
            drop(said);
            true
        }
    }
}

/// What the first bytes of a connection are.
enum Look {
    Http1,
    Http2,
    Closed,
}

/// A connection whose protocol-level refusals get JSON bodies.
#[derive(Debug)]
pub(crate) struct JsonRefusals<S> {
    inner: S,
    /// Bytes read from the connection before hyper took it (a start that looked like HTTP/2's
    /// preface and was not): hyper reads them first.
    replay: Vec<u8>,
    /// A replacement being written: its bytes, how many are written, and how many bytes of
    /// the original write it stands for.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<S> JsonRefusals<S> {
    pub(crate) fn new(inner: S) -> JsonRefusals<S> {
        JsonRefusals {
            inner,
            replacing: None,
            replay: Vec::new(),
        }
    }
}

impl<S: AsyncWrite + Unpin> JsonRefusals<S> {
    /// Writes the replacement in progress to the end; then reports the original write done.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, stands_for)) = &mut self.replacing {
            let rest = bytes.get(*written..).unwrap_or_default();
            if rest.is_empty() {
                let done = *stands_for;
                self.replacing = None;
                return Poll::Ready(Ok(done));
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, rest))?;
            if n == 0 {
                self.replacing = None;
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(0))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonRefusals<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.replay.is_empty() {
            let n = self.replay.len().min(buf.remaining());
            let replayed: Vec<u8> = self.replay.drain(..n).collect();
            buf.put_slice(&replayed);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonRefusals<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match json_refusal(buf) {
                Some(replacement) => this.replacing = Some((replacement, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        this.poll_replacement(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next())
            && (self.replacing.is_some() || json_refusal(only).is_some())
        {
            return self.poll_write(cx, only);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// hyper's refusal of an unparseable request, rewritten with a JSON body; `None` for anything
/// else.
fn json_refusal(written: &[u8]) -> Option<Vec<u8>> {
    // Cheap tests first: this looks at every single-buffer write.
    if !written.starts_with(b"HTTP/1.1 ") || !written.ends_with(b"\r\n\r\n") || written.len() > 256
    {
        return None;
    }
    let head = std::str::from_utf8(written)
        .ok()?
        .strip_suffix("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let (code, reason) = status_line.strip_prefix("HTTP/1.1 ")?.split_once(' ')?;
    let status: u16 = code.parse().ok()?;
    let rest: Vec<&str> = lines.collect();
    let ["connection: close", "content-length: 0", date] = rest.as_slice() else {
        return None;
    };
    if !(400..600).contains(&status) || !date.starts_with("date: ") {
        return None;
    }
    let (code, message) = match status {
        414 => (
            "uri_too_long",
            "the request target is longer than 65,534 bytes".to_owned(),
        ),
        431 => (
            "headers_too_large",
            "the request has more than 100 header fields, or its head is over 128 KiB".to_owned(),
        ),
        400 => (
            "malformed_http",
            "the request is not valid HTTP/1.1 (its request line, a header field or its \
             length cannot be read)"
                .to_owned(),
        ),
        _ => (
            "malformed_http",
            format!("the request was refused: {reason}"),
        ),
    };
    let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
    Some(
        format!(
            "{status_line}\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\n\
             cache-control: no-store\r\nconnection: close\r\ncontent-length: {}\r\n{date}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    const REFUSAL: &str = "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\
                           content-length: 0\r\ndate: Sun, 22 Nov 2026 08:18:58 GMT\r\n\r\n";

    #[test]
    fn hypers_refusals_get_a_json_body_and_keep_their_status() {
        let rewritten = String::from_utf8(json_refusal(REFUSAL.as_bytes()).unwrap()).unwrap();
        let (head, body) = rewritten.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("\r\ncontent-type: application/json\r\n"));
        assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())));
        assert!(head.ends_with("\r\ndate: Sun, 22 Nov 2026 08:18:58 GMT"));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "headers_too_large");
    }

    #[test]
    fn anything_else_is_written_as_it_is() {
        for other in [
            // A route's own response.
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
            // A success without a body.
            "HTTP/1.1 204 No Content\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
            // More headers than hyper's refusal has.
            "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\nx: y\r\ndate: x\r\n\r\n",
            // Part of one.
            "HTTP/1.1 400 Bad Request\r\nconnection: close\r\n",
            // Body bytes.
            "{\"error\": \"HTTP/1.1 400\"}",
            "",
        ] {
            assert_eq!(json_refusal(other.as_bytes()), None, "{other:?}");
        }
        assert_eq!(json_refusal(&[0xff, 0xfe, b'\r', b'\n']), None);
    }

    /// A writer that takes at most `chunk` bytes per call and is not ready every other call.
    struct Trickle {
        written: Vec<u8>,
        chunk: usize,
        ready: bool,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.ready = !self.ready;
            if !self.ready {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(self.chunk);
            self.written
                .extend_from_slice(buf.get(..n).unwrap_or_default());
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_replacement_is_written_whole_through_partial_writes() {
        use tokio::io::AsyncWriteExt;
        let mut stream = JsonRefusals::new(Trickle {
            written: Vec::new(),
            chunk: 7,
            ready: false,
        });
        let reported = stream.write(REFUSAL.as_bytes()).await.unwrap();
        assert_eq!(
            reported,
            REFUSAL.len(),
            "the original write is reported whole"
        );
        stream.write_all(b"next").await.unwrap();
        let written = String::from_utf8(stream.inner.written).unwrap();
        let expected = String::from_utf8(json_refusal(REFUSAL.as_bytes()).unwrap()).unwrap();
        assert_eq!(written, format!("{expected}next"));
    }
}
