//! A request as the transport sends it, built from a `gitlab` crate `Endpoint`: method,
//! full URL (no secrets in it), optional body.

use gitlab::api::Endpoint;
use url::Url;

use assent_forge::ForgeError;

/// An HTTP method the adapter uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Put,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }

    pub(crate) fn is_read(self) -> bool {
        self == Method::Get
    }
}

/// A request ready to send: method, full URL (no secrets in it), optional body.
#[derive(Debug, Clone)]
pub(crate) struct PreparedRequest {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) body: Option<(&'static str, Vec<u8>)>,
}

impl PreparedRequest {
    /// Builds the request an `Endpoint` describes, relative to the API base (which ends in
    /// `/`). Query parameters come from `parameters()`; a GET's form body (the crate's `Tree`
    /// puts its parameters there) is moved into the query string, since a GET carries no body.
    pub(crate) fn from_endpoint<E: Endpoint>(base: &Url, endpoint: &E) -> Result<Self, ForgeError> {
        let method_name = endpoint.method();
        let path = endpoint.endpoint();
        let route_hint = format!("{}{}", base.path(), path);
        let method = match method_name.as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            other => {
                return Err(ForgeError::Decode {
                    method: other.to_owned(),
                    route: route_hint,
                    message: "method not supported by the adapter".into(),
                });
            }
        };
        let build_error = |message: String| ForgeError::Decode {
            method: method.as_str().to_owned(),
            route: route_hint.clone(),
            message,
        };
        let mut url = Url::parse(&format!("{}{}", base.as_str(), path))
            .map_err(|e| build_error(format!("cannot build the request URL: {e}")))?;
        endpoint.parameters().add_to_url(&mut url);
        let mut body = endpoint
            .body()
            .map_err(|e| build_error(format!("cannot encode the request body: {e}")))?;
        if method == Method::Get
            && let Some((mime, data)) = body.take()
        {
            if mime != "application/x-www-form-urlencoded" {
                return Err(build_error(format!("a GET cannot carry a {mime} body")));
            }
            let pairs: Vec<(String, String)> =
                url::form_urlencoded::parse(&data).into_owned().collect();
            if !pairs.is_empty() {
                url.query_pairs_mut().extend_pairs(pairs);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(PreparedRequest { method, url, body })
    }

    /// The route named in errors: the URL path, no host, no query.
    pub(crate) fn route(&self) -> String {
        self.url.path().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn redirect_free_get_puts_form_body_in_the_query() {
        let base = url("https://gl.example/api/v4/");
        let tree = gitlab::api::projects::repository::Tree::builder()
            .project("group/sub/proj")
            .path("dir/a b")
            .ref_("abc")
            .recursive(true)
            .build()
            .unwrap();
        let req = PreparedRequest::from_endpoint(&base, &tree).unwrap();
        assert_eq!(req.method, Method::Get);
        assert!(req.body.is_none());
        assert_eq!(
            req.url.path(),
            "/api/v4/projects/group%2Fsub%2Fproj/repository/tree"
        );
        let q: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
        assert!(q.contains(&("path".into(), "dir/a b".into())));
        assert!(q.contains(&("recursive".into(), "true".into())));
    }
}
