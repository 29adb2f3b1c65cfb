//! A SOCKS relay on loopback, for tests of proxy support.
//!
//! [`SocksRelay::start`] listens on `127.0.0.1:0` and speaks SOCKS5 (RFC 1928: no
//! authentication, or user name and password per RFC 1929 when the client offers it) and
//! SOCKS4/4a. Every CONNECT is answered with success and relayed to one fixed upstream
//! address (the fake GitLab), whatever target it names, so a test can use any host name in
//! the API URL. Each CONNECT is recorded ([`SocksConnect`]). The relay stops when dropped.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One CONNECT the relay accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocksConnect {
    /// 4 or 5.
    pub version: u8,
    /// The target as asked: `host:port`, `a.b.c.d:port` or `[v6]:port`.
    pub target: String,
    /// The user name given (SOCKS5 authentication, or the SOCKS4 user id when not empty).
    pub username: Option<String>,
    /// The password given (SOCKS5 authentication only).
    pub password: Option<String>,
}

/// A running SOCKS relay to one upstream address.
pub struct SocksRelay {
    addr: SocketAddr,
    connects: Arc<Mutex<Vec<SocksConnect>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl SocksRelay {
    /// Starts a relay whose every CONNECT reaches `upstream`.
    pub fn start(upstream: SocketAddr) -> SocksRelay {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let connects = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, flag) = (connects.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, upstream, &log);
                });
            }
        });
        SocksRelay {
            addr,
            connects,
            stop,
            accept: Some(accept),
        }
    }

    /// `host:port` of the relay.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// Every CONNECT so far, in order.
    pub fn connects(&self) -> Vec<SocksConnect> {
        self.connects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for SocksRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

fn read_byte(s: &mut TcpStream) -> io::Result<u8> {
    let mut b = [0u8; 1];
    s.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_vec(s: &mut TcpStream, n: usize) -> io::Result<Vec<u8>> {
    let mut v = vec![0u8; n];
    s.read_exact(&mut v)?;
    Ok(v)
}

/// Reads up to a NUL byte (SOCKS4 user id and host name).
fn read_cstr(s: &mut TcpStream) -> io::Result<String> {
    let mut out = Vec::new();
    loop {
        match read_byte(s)? {
            0 => return Ok(String::from_utf8_lossy(&out).into_owned()),
            b if out.len() < 1024 => out.push(b),
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "too long")),
        }
    }
}

fn port(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[0], bytes[1]])
}

fn serve(
    mut client: TcpStream,
    upstream: SocketAddr,
    log: &Mutex<Vec<SocksConnect>>,
) -> io::Result<()> {
    let connect = match read_byte(&mut client)? {
        5 => socks5(&mut client)?,
        4 => socks4(&mut client)?,
        _ => return Ok(()),
    };
    log.lock().unwrap_or_else(|e| e.into_inner()).push(connect);
    let server = TcpStream::connect(upstream)?;
    relay(client, server)
}

fn socks5(client: &mut TcpStream) -> io::Result<SocksConnect> {
    let methods = read_byte(client)? as usize;
    let methods = read_vec(client, methods)?;
    let (mut username, mut password) = (None, None);
    if methods.contains(&2) {
        client.write_all(&[5, 2])?;
        let _version = read_byte(client)?;
        let ulen = read_byte(client)? as usize;
        username = Some(String::from_utf8_lossy(&read_vec(client, ulen)?).into_owned());
        let plen = read_byte(client)? as usize;
        password = Some(String::from_utf8_lossy(&read_vec(client, plen)?).into_owned());
        client.write_all(&[1, 0])?;
    } else {
        client.write_all(&[5, 0])?;
    }
    let head = read_vec(client, 4)?; // version, command, reserved, address type
    let host = match head[3] {
        1 => {
            let a = read_vec(client, 4)?;
            format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
        }
        3 => {
            let len = read_byte(client)? as usize;
            String::from_utf8_lossy(&read_vec(client, len)?).into_owned()
        }
        4 => {
            let a: [u8; 16] = read_vec(client, 16)?.try_into().expect("16 bytes");
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "address type")),
    };
    let target_port = port(&read_vec(client, 2)?);
    client.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0])?;
    Ok(SocksConnect {
        version: 5,
        target: format!("{host}:{target_port}"),
        username,
        password,
    })
}

fn socks4(client: &mut TcpStream) -> io::Result<SocksConnect> {
    let head = read_vec(client, 7)?; // command, port (2), address (4)
    let target_port = port(&head[1..3]);
    let ip = &head[3..7];
    let user = read_cstr(client)?;
    // SOCKS4a: 0.0.0.x (x ≠ 0) says a host name follows the user id.
    let host = if ip[..3] == [0, 0, 0] && ip[3] != 0 {
        read_cstr(client)?
    } else {
        format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3])
    };
    client.write_all(&[0, 90, 0, 0, 0, 0, 0, 0])?;
    Ok(SocksConnect {
        version: 4,
        target: format!("{host}:{target_port}"),
        username: (!user.is_empty()).then_some(user),
        password: None,
    })
}

/// Copies both ways until either side closes.
fn relay(client: TcpStream, server: TcpStream) -> io::Result<()> {
    let (mut client_read, mut server_write) = (client.try_clone()?, server.try_clone()?);
    let upstream = std::thread::spawn(move || {
        let _ = io::copy(&mut client_read, &mut server_write);
        let _ = server_write.shutdown(Shutdown::Write);
    });
    let (mut server_read, mut client_write) = (server, client);
    let _ = io::copy(&mut server_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = upstream.join();
    Ok(())
}
