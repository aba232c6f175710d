//! TLS for `roots://` connections (not available yet).

use std::net::TcpStream;

/// A TLS stream over TCP.
pub struct TlsStream(TcpStream);

impl TlsStream {
    /// The TCP stream under the TLS layer.
    pub fn get_ref(&self) -> &TcpStream {
        &self.0
    }
}

impl std::io::Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Why TLS could not be set up.
#[derive(Debug)]
pub enum TlsError {
    /// TLS cannot be used (configuration, certificates).
    Setup(String),
}

/// Starts TLS on `tcp` for `host`.
pub fn connect(_host: &str, _tcp: TcpStream) -> Result<TlsStream, TlsError> {
    Err(TlsError::Setup(
        "TLS (roots://) is not supported yet".into(),
    ))
}
