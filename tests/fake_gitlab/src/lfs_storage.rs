//! The fake's object storage for LFS objects, and GitLab's redirect to it.
//!
//! GitLab's raw file route (`lib/api/files.rb`) answers `lfs=true` for an LFS pointer whose
//! object is in object storage with `present_carrierwave_file!` (`lib/api/helpers.rb`): unless
//! the storage's `proxy_download` is on, that is a `302` to a signed storage URL, which the
//! client fetches from the storage, not from GitLab. Here the storage is a route of the fake
//! itself, `/__storage/lfs/<oid>`, so a test sees both requests in one log. The storage is
//! not GitLab: a request that presents any credential (`PRIVATE-TOKEN`, `Authorization`,
//! `JOB-TOKEN`) is recorded as a violation, since the token would then have left GitLab.

use crate::http::{RawRequest, Response};
use crate::model::State;

/// The path prefix of the fake's storage route; the LFS object id follows it.
pub const STORAGE_LFS_PREFIX: &str = "/__storage/lfs/";

/// The signed storage URL GitLab redirects a raw read of object `oid` to: on the fake's own
/// host, over the fake's plain http (loopback), with a query standing for the signature a
/// client must keep as it is.
pub(crate) fn signed_location(host: &str, oid: &str) -> String {
    format!("http://{host}{STORAGE_LFS_PREFIX}{oid}?X-Amz-Expires=300&X-Amz-Signature=fake")
}

/// Answers a storage request for `oid` from the LFS objects of every project, noting a
/// credential presented to the storage in `violations`.
pub(crate) fn serve(
    st: &State,
    violations: &mut Vec<String>,
    req: &RawRequest,
    oid: &str,
) -> Response {
    for credential in ["private-token", "authorization", "job-token"] {
        if req.header(credential).is_some() {
            violations.push(format!(
                "credential ({credential}) sent to object storage: {} {STORAGE_LFS_PREFIX}{oid}",
                req.method
            ));
        }
    }
    if req.method != "GET" {
        return Response::message(405, "405 Method Not Allowed");
    }
    match st.projects.iter().find_map(|p| p.lfs_objects.get(oid)) {
        Some(object) => Response::bytes(200, "application/octet-stream", object.0.clone()),
        None => Response::bytes(
            404,
            "application/xml",
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>".to_vec(),
        ),
    }
}
