//! A small HTTP/1.1 server over `std::net`. Hand-written rather than tiny_http because fault
//! injection needs socket-level control per request: closing a keep-alive connection without
//! answering, or resetting it (RST) before the request is handled.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

pub(crate) struct RawRequest {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl RawRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, v: &serde_json::Value) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: serde_json::to_vec(v).expect("json"),
        }
    }
    pub fn message(status: u16, msg: &str) -> Response {
        Response::json(status, &serde_json::json!({ "message": msg }))
    }
    pub fn error(status: u16, msg: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": msg }))
    }
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
        }
    }
    pub fn header(mut self, k: &str, v: impl Into<String>) -> Response {
        self.headers.push((k.into(), v.into()));
        self
    }
}

/// What to do with a connection after handling a request.
pub(crate) enum Outcome {
    Respond(Response),
    /// Close the connection (FIN) without writing a response.
    Close,
    /// Reset the connection (RST).
    Reset,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

fn read_line(r: &mut BufReader<TcpStream>) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    let n = r.by_ref().take(64 * 1024).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    while buf.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Reads one request; `Ok(None)` on a cleanly closed connection.
pub(crate) fn read_request(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
) -> io::Result<Option<RawRequest>> {
    let mut line = match read_line(r)? {
        Some(l) => l,
        None => return Ok(None),
    };
    while line.is_empty() {
        line = match read_line(r)? {
            Some(l) => l,
            None => return Ok(None),
        };
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let version = parts.next().unwrap_or("HTTP/1.1").to_string();
    let mut headers = Vec::new();
    loop {
        let l = read_line(r)?.ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "eof"))?;
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let conn = get("connection").unwrap_or_default().to_ascii_lowercase();
    let keep_alive = if version == "HTTP/1.0" {
        conn.contains("keep-alive")
    } else {
        !conn.contains("close")
    };
    if get("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked")) {
        loop {
            let size_line =
                read_line(r)?.ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "eof"))?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk"))?;
            if size == 0 {
                // trailers
                while let Some(l) = read_line(r)? {
                    if l.is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            read_line(r)?;
        }
    } else if let Some(len) = get("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad length"))?;
        body.resize(len, 0);
        r.read_exact(&mut body)?;
    }
    Ok(Some(RawRequest {
        method,
        target,
        headers,
        body,
        keep_alive,
    }))
}

pub(crate) fn write_response(
    w: &mut TcpStream,
    resp: &Response,
    keep_alive: bool,
    head_only: bool,
) -> io::Result<()> {
    let mut out = Vec::with_capacity(resp.body.len() + 256);
    write!(out, "HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status))?;
    for (k, v) in &resp.headers {
        write!(out, "{k}: {v}\r\n")?;
    }
    write!(out, "Content-Length: {}\r\n", resp.body.len())?;
    write!(
        out,
        "Connection: {}\r\n\r\n",
        if keep_alive { "keep-alive" } else { "close" }
    )?;
    if !head_only {
        out.extend_from_slice(&resp.body);
    }
    w.write_all(&out)?;
    w.flush()
}

/// Closes `s` with an RST instead of a FIN.
pub(crate) fn reset(s: &TcpStream) {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt on a valid, owned socket fd with a correctly sized struct.
        // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
        // `unsafe_code` everywhere else.
        #[allow(unsafe_code)]
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
    }
    // The RST goes out when the last descriptor of the socket is closed.
}
