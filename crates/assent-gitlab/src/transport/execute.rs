//! The request executor: one attempt sent with the token and its answer read, within the
//! body limit, within the run's content budget, or by a caller's sink.

use std::sync::atomic::Ordering;

use ureq::Body;
use ureq::http::Response;

use super::{Failure, Method, PreparedRequest, RawResponse, Transport};
use assent_forge::{ContentBudget, TransportFailure};

/// Reads a 2xx body as it arrives ([`Transport::execute_streamed`]).
pub(crate) type StreamSink<'s, R> =
    &'s mut dyn FnMut(&mut dyn std::io::Read) -> Result<R, StreamFailure>;

/// Why a streamed body could not be read to its end.
#[derive(Debug)]
pub(crate) enum StreamFailure {
    /// The connection failed while the body arrived (reset, timeout, truncated).
    Io(std::io::Error),
    /// What the sink must keep of the body exceeds its bound.
    TooLarge,
}

impl Transport {
    /// One attempt: sends the request once and reads the whole (limited) body. Counts the
    /// attempt. Never follows a redirect.
    pub(crate) fn execute(&self, request: &PreparedRequest) -> Result<RawResponse, Failure> {
        self.execute_with::<()>(request, None, None)
            .map(|(response, _)| response)
    }

    /// [`Transport::execute`] taking a successful answer's body from `budget`: nothing is
    /// sent once it is spent, a body announced larger than what is left is refused unread,
    /// and a body of unannounced length is taken as it arrives and stops where it no longer
    /// fits. Only the bytes of an answer returned stay taken.
    pub(crate) fn execute_within(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
    ) -> Result<RawResponse, Failure> {
        self.execute_with::<()>(request, budget, None)
            .map(|(response, _)| response)
    }

    /// One GET of an LFS object at the storage URL GitLab redirected a raw read to
    /// (docs/transport.md, "The one followed redirect"): counted as a read, sent **without**
    /// the token or any other credential (the URL carries its own signed authority, and the
    /// storage is not GitLab), its body read as [`Transport::execute_within`] reads one,
    /// within the same limit and budget. Never follows a further redirect either.
    pub(crate) fn execute_storage_within(
        &self,
        url: &url::Url,
        budget: Option<&ContentBudget>,
    ) -> Result<RawResponse, Failure> {
        refuse_when_spent(budget)?;
        self.count(Method::Get);
        let mut response = self
            .agent
            .get(url.as_str())
            .call()
            .map_err(|e| self.classify_error(&e))?;
        let status = response.status().as_u16();
        let headers = lowercase_headers(&response);
        let body = self.read_body(&mut response, status, budget)?;
        Ok(RawResponse {
            status,
            headers,
            body,
        })
    }

    /// [`Transport::execute`], except that a 2xx body is not buffered: `sink` reads it as it
    /// arrives, without the body limit (the sink keeps its own bounds), and the response comes
    /// back with an empty body beside what the sink made of it. Any other status is read as
    /// [`Transport::execute`] reads it, so its error message is GitLab's.
    pub(crate) fn execute_streamed<R>(
        &self,
        request: &PreparedRequest,
        sink: StreamSink<'_, R>,
    ) -> Result<(RawResponse, Option<R>), Failure> {
        self.execute_with(request, None, Some(sink))
    }

    /// One attempt, as a sequence: refused unsent when the budget is spent, counted, sent
    /// once with the token, then its 2xx body handed to the sink when there is one, or every
    /// body read within the limit (and a 2xx body within the budget).
    fn execute_with<R>(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
        sink: Option<StreamSink<'_, R>>,
    ) -> Result<(RawResponse, Option<R>), Failure> {
        refuse_when_spent(budget)?;
        self.count(request.method);
        let mut response = self.send(request)?;
        let status = response.status().as_u16();
        let headers = lowercase_headers(&response);
        if let Some(sink) = sink
            && is_success(status)
        {
            let value = self.stream_body(&mut response, status, sink)?;
            let body = Vec::new();
            return Ok((
                RawResponse {
                    status,
                    headers,
                    body,
                },
                Some(value),
            ));
        }
        let body = self.read_body(&mut response, status, budget)?;
        Ok((
            RawResponse {
                status,
                headers,
                body,
            },
            None,
        ))
    }

    /// Counts the attempt, before it is sent: a request that gets no answer was still made.
    fn count(&self, method: Method) {
        let counter = if method.is_read() {
            &self.reads
        } else {
            &self.writes
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends the request once, the token in `PRIVATE-TOKEN` and nowhere else.
    fn send(&self, request: &PreparedRequest) -> Result<Response<Body>, Failure> {
        let url = request.url.as_str();
        let token = self.token.expose();
        let result = match (request.method, &request.body) {
            (Method::Get, _) => self.agent.get(url).header("PRIVATE-TOKEN", token).call(),
            (Method::Post, None) => self
                .agent
                .post(url)
                .header("PRIVATE-TOKEN", token)
                .send_empty(),
            (Method::Put, None) => self
                .agent
                .put(url)
                .header("PRIVATE-TOKEN", token)
                .send_empty(),
            (Method::Post, Some((mime, data))) => self
                .agent
                .post(url)
                .header("PRIVATE-TOKEN", token)
                .header("Content-Type", *mime)
                .send(&data[..]),
            (Method::Put, Some((mime, data))) => self
                .agent
                .put(url)
                .header("PRIVATE-TOKEN", token)
                .header("Content-Type", *mime)
                .send(&data[..]),
        };
        result.map_err(|e| self.classify_error(&e))
    }

    /// Hands a 2xx body to the sink as it arrives; the sink keeps its own bounds.
    fn stream_body<R>(
        &self,
        response: &mut Response<Body>,
        status: u16,
        sink: StreamSink<'_, R>,
    ) -> Result<R, Failure> {
        let mut reader = response.body_mut().as_reader();
        sink(&mut reader).map_err(|failure| match failure {
            StreamFailure::TooLarge => Failure::BodyTooLarge {
                status,
                limit: self.body_limit,
            },
            StreamFailure::Io(e) => Failure::NoAnswer(
                self.redact(format!("reading the response body: {e}")),
                TransportFailure::Other,
            ),
        })
    }

    /// Reads the whole body within the body limit, a 2xx body within `budget` too; on a
    /// failed read, nothing of it stays taken.
    fn read_body(
        &self,
        response: &mut Response<Body>,
        status: u16,
        budget: Option<&ContentBudget>,
    ) -> Result<Vec<u8>, Failure> {
        // Sized from Content-Length (within the limit) so a 10 MB file is one allocation of
        // its size, not a doubling series ending at 16 MiB with copies on the way.
        let expected = response.body().content_length().unwrap_or(0);
        // An uncompressed body announced larger than the limit is refused unread (the
        // connection is dropped with the response): a listing asks again with a smaller
        // page instead of downloading up to the limit first. A compressed body is judged
        // after decompression, by the reader below.
        let uncompressed = is_uncompressed(response);
        if uncompressed && expected > self.body_limit {
            return Err(Failure::BodyTooLarge {
                status,
                limit: self.body_limit,
            });
        }
        // Only a successful answer is content; an error's short message is not taken.
        let budget = budget.filter(|_| is_success(status));
        let mut taken = take_announced(budget, uncompressed, expected)?;
        let mut body = Vec::with_capacity(expected.min(self.body_limit) as usize);
        let read = self.read_limited(response, &mut body, budget, &mut taken);
        if read.is_err()
            && let Some(budget) = budget
        {
            budget.give_back(taken);
        }
        read.map_err(|e| self.read_failure(e, status, budget))?;
        Ok(body)
    }

    /// Reads the body to its end through ureq's limit, and through `budget` when there is one.
    fn read_limited(
        &self,
        response: &mut Response<Body>,
        body: &mut Vec<u8>,
        budget: Option<&ContentBudget>,
        taken: &mut u64,
    ) -> Result<(), ureq::Error> {
        let mut reader = response
            .body_mut()
            .with_config()
            .limit(self.body_limit)
            .reader();
        match budget {
            None => std::io::Read::read_to_end(&mut reader, body).map(drop),
            Some(budget) => read_within(&mut reader, body, budget, taken),
        }
        .map_err(ureq::Error::from)
    }

    /// What a failed body read means: over the budget, over the limit, or no complete answer.
    fn read_failure(
        &self,
        error: ureq::Error,
        status: u16,
        budget: Option<&ContentBudget>,
    ) -> Failure {
        match error {
            ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                Failure::OverBudget {
                    limit: budget.map_or(0, ContentBudget::limit),
                }
            }
            ureq::Error::BodyExceedsLimit(_) => Failure::BodyTooLarge {
                status,
                limit: self.body_limit,
            },
            e => Failure::NoAnswer(
                self.redact(format!("reading the response body: {e}")),
                TransportFailure::Other,
            ),
        }
    }
}

/// Nothing is sent once the run's content budget is spent.
fn refuse_when_spent(budget: Option<&ContentBudget>) -> Result<(), Failure> {
    match budget {
        Some(budget) if budget.is_spent() => Err(Failure::OverBudget {
            limit: budget.limit(),
        }),
        _ => Ok(()),
    }
}

fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The headers as [`RawResponse`] holds them: names lowercase, values as text.
fn lowercase_headers(response: &Response<Body>) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Whether the body arrives as it is counted: no `Content-Encoding`, or `identity`.
fn is_uncompressed(response: &Response<Body>) -> bool {
    response
        .headers()
        .get("content-encoding")
        .is_none_or(|v| v.as_bytes().eq_ignore_ascii_case(b"identity"))
}

/// Takes an uncompressed 2xx body's announced length from `budget` before a byte is read,
/// so a body that cannot fit is refused unread; the bytes taken so far.
fn take_announced(
    budget: Option<&ContentBudget>,
    uncompressed: bool,
    expected: u64,
) -> Result<u64, Failure> {
    match budget {
        Some(budget) if uncompressed && expected > 0 => {
            if !budget.try_take(expected) {
                return Err(Failure::OverBudget {
                    limit: budget.limit(),
                });
            }
            Ok(expected)
        }
        _ => Ok(0),
    }
}

/// Reads `reader` to its end into `body`, taking from `budget` every byte beyond the
/// `taken` already taken for it (the announced length); a byte that does not fit stops the
/// read with [`std::io::ErrorKind::FileTooLarge`].
fn read_within(
    reader: &mut impl std::io::Read,
    body: &mut Vec<u8>,
    budget: &ContentBudget,
    taken: &mut u64,
) -> std::io::Result<()> {
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let needed = (body.len() + n) as u64;
        if needed > *taken {
            if !budget.try_take(needed - *taken) {
                return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
            }
            *taken = needed;
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_of_unannounced_length_is_taken_as_it_arrives_and_stops_where_it_does_not_fit() {
        let text = vec![b'x'; 200 * 1024];
        // Fits: every byte taken, none beyond.
        let budget = ContentBudget::new(300 * 1024);
        let (mut body, mut taken) = (Vec::new(), 0);
        read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap();
        assert_eq!((body.len(), taken), (text.len(), text.len() as u64));
        assert!(budget.try_take(100 * 1024), "exactly the rest is left");
        assert!(!budget.try_take(1));

        // Does not fit: the read stops at the first chunk past the budget, having held no
        // more than the budget, and the budget is spent.
        let budget = ContentBudget::new(100 * 1024);
        let (mut body, mut taken) = (Vec::new(), 0);
        let err = read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(body.len() as u64 <= budget.limit(), "{}", body.len());
        assert_eq!(taken, body.len() as u64);
        assert!(budget.is_spent());

        // Announced and taken already: reading it takes nothing more.
        let budget = ContentBudget::new(text.len() as u64);
        assert!(budget.try_take(text.len() as u64));
        let (mut body, mut taken) = (Vec::new(), text.len() as u64);
        read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap();
        assert_eq!(body.len(), text.len());
        assert!(!budget.is_spent());
    }
}
