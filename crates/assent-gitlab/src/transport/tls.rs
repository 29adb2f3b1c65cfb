//! The TLS settings of every agent: Mozilla's public roots, plus a CA file's certificates
//! when one is given.

use std::path::Path;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

use crate::GitLabConfigError;

/// The TLS settings of every agent: the public roots, plus `ca_file`'s certificates.
pub(crate) fn tls_config(ca_file: Option<&Path>) -> Result<TlsConfig, GitLabConfigError> {
    Ok(match ca_file {
        None => TlsConfig::builder().build(),
        Some(path) => TlsConfig::builder()
            .root_certs(roots_with_ca_file(path)?)
            .build(),
    })
}

/// The public roots plus every certificate of a PEM file.
fn roots_with_ca_file(path: &Path) -> Result<RootCerts, GitLabConfigError> {
    let ca_error = |m: String| GitLabConfigError::CaFile(format!("{}: {m}", path.display()));
    let pem = std::fs::read(path).map_err(|e| ca_error(e.to_string()))?;
    let mut custom = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item.map_err(|e| ca_error(format!("invalid PEM: {e}")))? {
            PemItem::Certificate(cert) => custom.push(cert),
            _ => continue,
        }
    }
    if custom.is_empty() {
        return Err(ca_error("no PEM certificate found".into()));
    }
    let public = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()));
    Ok(RootCerts::from(public.chain(custom)))
}
