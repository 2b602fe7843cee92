//! The one connector to a probe: a channel per probe, TLS for `https://` URLs and the bearer
//! token on every call. The coordinator connects through here; so do the probe's tests.

use super::LinkError;
use super::tls::ClientTlsFiles;
use super::token::{AttachToken, ProbeToken, TOKEN_ENV};
use super::transport::{InProcessProbe, ProbeTransport};
use crate::v1::link_client::LinkClient;
use crate::v1::probe_client::ProbeClient;
use openbench_common::error_text::error_chain;
use openbench_common::limits::GRPC_MESSAGE_LIMIT_BYTES;
use std::path::PathBuf;
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// A channel to a probe (over the network, or in this process) that attaches the token to every
/// call.
pub type ProbeChannel = InterceptedService<ProbeTransport, AttachToken>;

/// Environment variable naming a file that holds the probe token (read before [`TOKEN_ENV`]).
pub const TOKEN_FILE_ENV: &str = "OPENBENCH_PROBE_TOKEN_FILE";
/// Environment variable naming the PEM CA that signed the probes' certificates.
pub const CA_ENV: &str = "OPENBENCH_PROBE_CA";
/// Environment variable naming the client certificate (PEM) for mutual TLS.
pub const CLIENT_CERT_ENV: &str = "OPENBENCH_PROBE_CLIENT_CERT";
/// Environment variable naming the client key (PEM) for mutual TLS.
pub const CLIENT_KEY_ENV: &str = "OPENBENCH_PROBE_CLIENT_KEY";

/// HTTP/2 PING interval on every probe channel, idle or not: a connection whose peer stops
/// answering (a partition, a stopped process) is closed after [`KEEPALIVE_TIMEOUT`] more, so
/// tonic reconnects instead of sending into a dead connection. Region health itself is judged by
/// the coordinator's `Link.Ping` (docs/faults.md); keepalive is the transport's own guard.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(2);
/// How long a keepalive PING may go unanswered before the connection is closed.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest request a caller encodes: a planned request is a few KiB, far below this.
const MAX_ENCODING_BYTES: usize = 64 * 1024 * 1024;

/// What a caller presents to probes: TLS files for `https://` URLs and the token.
#[derive(Debug, Clone, Default)]
pub struct ClientSecurity {
    /// CA and client identity used for `https://` probe URLs.
    pub tls: ClientTlsFiles,
    /// Bearer token sent on every call.
    pub token: Option<ProbeToken>,
}

impl ClientSecurity {
    /// Reads the coordinator's settings from the environment: the token from the file named by
    /// `OPENBENCH_PROBE_TOKEN_FILE` or from `OPENBENCH_PROBE_TOKEN`, the CA from
    /// `OPENBENCH_PROBE_CA`, the client identity from `OPENBENCH_PROBE_CLIENT_CERT` and
    /// `OPENBENCH_PROBE_CLIENT_KEY` (both or neither).
    pub fn from_env() -> Result<ClientSecurity, LinkError> {
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let token = ProbeToken::load(path(TOKEN_FILE_ENV).as_deref(), TOKEN_ENV)?;
        let identity = match (path(CLIENT_CERT_ENV), path(CLIENT_KEY_ENV)) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => {
                return Err(LinkError::Tls {
                    role: "client identity".into(),
                    path: format!("${CLIENT_CERT_ENV} / ${CLIENT_KEY_ENV}"),
                    message: "set both or neither".into(),
                });
            }
        };
        Ok(ClientSecurity {
            tls: ClientTlsFiles {
                ca: path(CA_ENV),
                identity,
            },
            token,
        })
    }
}

/// Connects to the probe at `url` (`http://` or `https://`), presenting `security`. Responses
/// up to [`GRPC_MESSAGE_LIMIT_BYTES`] are decoded (the probe keeps its records within it).
pub async fn connect(
    url: &str,
    security: &ClientSecurity,
) -> Result<ProbeClient<ProbeChannel>, LinkError> {
    Ok(probe_client(channel(url, security).await?))
}

/// The `Probe` client over `channel`, with the link's message limits.
pub fn probe_client(channel: ProbeChannel) -> ProbeClient<ProbeChannel> {
    ProbeClient::new(channel)
        .max_decoding_message_size(GRPC_MESSAGE_LIMIT_BYTES)
        .max_encoding_message_size(MAX_ENCODING_BYTES)
}

/// The `Link` client (health pings) over `channel` (the coordinator gives it a channel of its
/// own, opened on its link runtime: `LinkRuntime`).
pub fn link_client(channel: ProbeChannel) -> LinkClient<ProbeChannel> {
    LinkClient::new(channel)
}

/// Opens a channel to the probe at `url` for `Probe` and `Link` clients:
/// TLS for `https://`, the token on every call, HTTP/2 keepalive ([`KEEPALIVE_INTERVAL`],
/// [`KEEPALIVE_TIMEOUT`], also while idle). After the connection drops, the channel reconnects
/// by itself on the next call.
pub async fn channel(url: &str, security: &ClientSecurity) -> Result<ProbeChannel, LinkError> {
    let error = |message: String| LinkError::Connect {
        url: url.to_string(),
        message,
    };
    let mut endpoint = Channel::from_shared(url.to_string())
        .map_err(|e| error(format!("not a valid URL: {e}")))?
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if url.starts_with("https://") {
        endpoint = endpoint
            .tls_config(security.tls.load()?)
            .map_err(|e| error(format!("cannot use the TLS configuration: {e}")))?;
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| error(error_chain(&e)))?;
    let token = AttachToken::new(security.token.as_ref())?;
    Ok(InterceptedService::new(
        ProbeTransport::Network(channel),
        token,
    ))
}

/// A channel to a probe served in this process: the same calls, no socket and no token (the
/// probe's routes were never exposed to a network).
pub fn in_process_channel(probe: InProcessProbe) -> ProbeChannel {
    InterceptedService::new(ProbeTransport::InProcess(probe), AttachToken::none())
}
