//! TLS for `roots://`: rustls, trusting the system's CA certificates (with the usual
//! `SSL_CERT_FILE`/`SSL_CERT_DIR` overrides) and the grid's `X509_CERT_DIR`. A connection
//! switches to TLS when the server answers `kXR_protocol` with `kXR_gotoTLS`.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::ErrorKind;
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// A TLS stream over TCP.
pub(super) type TlsStream = StreamOwned<ClientConnection, TcpStream>;

/// Why TLS could not be started.
#[derive(Debug)]
pub(super) enum TlsError {
    /// The connection failed during the handshake (may pass).
    Io(std::io::Error),
    /// The server's certificate or TLS parameters were refused (will not pass).
    Rejected(String),
    /// TLS cannot be used here: no CA certificates, an invalid server name.
    Setup(String),
}

/// Starts TLS on `tcp` with the server `host`, and completes the handshake (so that a
/// certificate problem is reported here, not at the first read). `config` replaces the
/// default configuration (the system's CAs).
pub(super) fn connect(
    host: &str,
    mut tcp: TcpStream,
    config: Option<Arc<ClientConfig>>,
) -> Result<TlsStream, TlsError> {
    let config = match config {
        Some(c) => c,
        None => client_config().map_err(TlsError::Setup)?,
    };
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| TlsError::Setup(format!("\"{host}\" is not a valid TLS server name: {e}")))?;
    let mut conn =
        ClientConnection::new(config, name).map_err(|e| TlsError::Setup(e.to_string()))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(|e| {
            if e.kind() == ErrorKind::InvalidData {
                TlsError::Rejected(e.to_string())
            } else {
                TlsError::Io(e)
            }
        })?;
    }
    Ok(StreamOwned::new(conn, tcp))
}

/// The client configuration, built once per process.
fn client_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG.get_or_init(build_client_config).clone()
}

fn build_client_config() -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    // Unreadable system certificates are skipped: the others may suffice.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(dir) = crate::credentials::x509_cert_dir() {
        add_certificate_dir(&mut roots, Path::new(&dir));
    }
    if roots.is_empty() {
        return Err(
            "no CA certificates found (system store, SSL_CERT_FILE, SSL_CERT_DIR, X509_CERT_DIR)"
                .into(),
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Adds the PEM certificates of a grid CA directory (`<hash>.0`, `*.pem`).
fn add_certificate_dir(roots: &mut RootCertStore, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        let is_cert = name.ends_with(".pem")
            || name
                .rsplit_once('.')
                .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cert {
            continue;
        }
        if let Ok(certs) = CertificateDer::pem_file_iter(&path) {
            for cert in certs.flatten() {
                let _ = roots.add(cert);
            }
        }
    }
}
