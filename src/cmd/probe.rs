//! `probe` subcommands: one timed request against any OpenAI-compatible endpoint (`probe once`),
//! or a probe server for a remote region (`probe serve`).

use anyhow::{Context, bail};
use openbench_common::record::{Classification, Execution, TerminalRecord};
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role};
use openbench_common::spec::{
    Api, Auth, LoadedSpec, MaxTokensField, ProviderAdapter, RequestContract,
};
use openbench_common::tool::ToolOffer;
use openbench_probe::auth::{Exposure, ProbeToken, TOKEN_ENV, check_exposure};
use openbench_probe::connections::ConnectionLimits;
use openbench_probe::endpoint_policy::{EndpointPolicy, is_variable_name};
use openbench_probe::server::{ProbeConfig, ProbeSecurity, serve_secured};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_probe::tls::ServerTlsFiles;
use openbench_probe::{Credentials, Executor};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `probe` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProbeCommand {
    /// Execute one timed streaming request and print its terminal record and events as JSON.
    Once(OnceArgs),
    /// Serve the probe gRPC service for one region: the coordinator's session brings the adapters
    /// and contract; this machine keeps the credentials.
    Serve(ServeArgs),
}

/// Completion-ceiling field name, as a CLI value.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
#[allow(clippy::enum_variant_names)]
pub enum MaxField {
    /// `max_tokens`.
    #[value(name = "max_tokens")]
    MaxTokens,
    /// `max_completion_tokens`.
    #[value(name = "max_completion_tokens")]
    MaxCompletionTokens,
}

/// Arguments of `probe once`.
#[derive(Debug, clap::Args)]
pub struct OnceArgs {
    /// Base URL of the API (`…/v1`); the dialect's path (`/chat/completions` for the default
    /// `openai-chat`) is appended.
    #[arg(long)]
    base_url: String,
    /// API dialect: `openai-chat`, `anthropic-messages` (the key goes as `x-api-key`),
    /// `openai-responses` or `openai-completions`.
    #[arg(long, default_value = "openai-chat", value_parser = parse_api)]
    api: Api,
    /// Model id to request.
    #[arg(long)]
    model: String,
    /// System message.
    #[arg(long, default_value = "")]
    system: String,
    /// User message.
    #[arg(long)]
    user: String,
    /// Environment variable (or `.env` entry) holding a bearer key.
    #[arg(long)]
    api_key_env: Option<String>,
    /// Extra request header `Name:Value` (repeatable; values are treated as secrets).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// JSON object merged into the request body at top level.
    #[arg(long)]
    body_extra: Option<String>,
    /// Name of the completion-ceiling field.
    #[arg(long, value_enum, default_value = "max_tokens")]
    max_tokens_field: MaxField,
    /// Add `stream_options: {"include_usage": true}`.
    #[arg(long)]
    include_usage: bool,
    /// Offer one function tool, given as a JSON object `{"name", "description", "parameters"
    /// (JSON Schema), "choice": "forced" | "auto"}` or as the path of a file holding one. Sent
    /// in the `--api` dialect's own tool shape, as a run sends it (docs/methodology.md §3b);
    /// the call comes back in `tool_calls`. `openai-completions` has no tools and is refused.
    #[arg(long)]
    tool: Option<String>,
    /// Absolute deadline covering connect and the whole stream, ms.
    #[arg(long, default_value_t = 20_000)]
    timeout_ms: u64,
    /// Print one compact JSON line instead of pretty JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `probe serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: String,
    /// Region this probe serves: a session for another region is refused.
    #[arg(long)]
    region: String,
    /// A credential variable this probe may send (repeatable, or comma-separated in
    /// `$OPENBENCH_PROBE_CREDENTIALS`); read from the environment, then `./.env`, at each session
    /// open. A session naming any other variable is refused.
    #[arg(
        long = "credential",
        env = "OPENBENCH_PROBE_CREDENTIALS",
        value_delimiter = ','
    )]
    credentials: Vec<String>,
    /// A spec to take the region list and credential variable names from (optional; its
    /// adapters are not used: they come with the coordinator's session).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Where credentials may be sent: `VAR=URL` allows the URL prefix for the credential `VAR`,
    /// a bare `URL` for every credential (repeatable, or comma-separated in
    /// `$OPENBENCH_PROBE_ALLOW_ENDPOINTS`). With `--spec`, each of its providers' endpoints is
    /// allowed for that provider's own credentials too. Nothing else is: a session sending a
    /// credential anywhere else is refused at open. Plaintext `http://` beyond loopback needs an
    /// entry here.
    #[arg(
        long = "allow-endpoint",
        env = "OPENBENCH_PROBE_ALLOW_ENDPOINTS",
        value_delimiter = ','
    )]
    allow_endpoints: Vec<String>,
    /// TLS certificate chain (PEM); with `--tls-key`, the probe speaks TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// CA (PEM) that must have signed callers' client certificates (mutual TLS).
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// File holding the bearer token every call must carry (else `$OPENBENCH_PROBE_TOKEN`).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Also serve plaintext `grpc.health.v1` here (for Kubernetes readiness probes).
    #[arg(long)]
    health_listen: Option<String>,
    /// Allow a non-loopback listen address without TLS and a token (says so loudly at start).
    #[arg(long)]
    insecure_plaintext: bool,
    /// Seconds from accept to a connection's first call (TLS, HTTP/2 and one request); a
    /// connection that has made none by then is closed.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout_s: u64,
    /// Seconds from accept to a call with the token; a connection without one by then is closed.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    unauthenticated_timeout_s: u64,
    /// Connections without the token open at once (per port); a new one closes the oldest.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    max_unauthenticated: u64,
    /// Connections without the token open at once from one source address.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    max_unauthenticated_per_source: u64,
}

impl ProbeCommand {
    /// The telemetry identity: `probe serve` reports as the probe service of its region.
    pub fn service_identity(&self) -> crate::telemetry::ServiceIdentity {
        match self {
            ProbeCommand::Serve(args) => crate::telemetry::ServiceIdentity {
                default_name: crate::telemetry::PROBE_SERVICE,
                region: Some(args.region.clone()),
            },
            ProbeCommand::Once(_) => crate::telemetry::ServiceIdentity {
                default_name: crate::telemetry::COORDINATOR_SERVICE,
                region: None,
            },
        }
    }
}

/// Runs a `probe` subcommand.
pub async fn run(command: ProbeCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProbeCommand::Once(args) => once(args).await,
        ProbeCommand::Serve(args) => serve(args).await,
    }
}

/// Builds the ad-hoc adapter and its credentials. `--header` values become credentials (so they
/// are sent as sensitive headers and redacted from every output).
fn once_adapter(args: &OnceArgs) -> anyhow::Result<(ProviderAdapter, Credentials)> {
    let mut secrets: Vec<(String, String)> = Vec::new();
    let key = match &args.api_key_env {
        Some(name) => {
            let creds = Credentials::from_env(std::slice::from_ref(name))?;
            let value = creds.get(name).unwrap_or_default().to_string();
            secrets.push((name.clone(), value.clone()));
            Some((name.clone(), value))
        }
        None => None,
    };
    let anthropic = args.api == Api::AnthropicMessages;
    let auth = if args.headers.is_empty() {
        match &key {
            // Anthropic takes the key itself in `x-api-key`, never as a bearer token.
            Some((name, _)) if anthropic => Auth::Headers {
                headers: BTreeMap::from([("x-api-key".to_string(), name.clone())]),
            },
            Some((name, _)) => Auth::Bearer { env: name.clone() },
            None => Auth::None,
        }
    } else {
        let mut headers = BTreeMap::new();
        for (i, raw) in args.headers.iter().enumerate() {
            let Some((name, value)) = raw.split_once(':') else {
                bail!("--header #{}: expected `Name:Value`", i + 1);
            };
            let var = format!("OPENBENCH_ONCE_HEADER_{i}");
            headers.insert(name.trim().to_string(), var.clone());
            secrets.push((var, value.trim().to_string()));
        }
        if let Some((name, value)) = &key {
            if anthropic {
                headers.insert("x-api-key".into(), name.clone());
            } else {
                let var = "OPENBENCH_ONCE_AUTHORIZATION".to_string();
                headers.insert("Authorization".into(), var.clone());
                secrets.push((var, format!("Bearer {value}")));
            }
        }
        Auth::Headers { headers }
    };
    let extra_body: BTreeMap<String, serde_json::Value> = match &args.body_extra {
        Some(text) => serde_json::from_str(text)
            .context("--body-extra: expected a JSON object (e.g. '{\"top_k\": -1}')")?,
        None => BTreeMap::new(),
    };
    let endpoint = args.api.post_url(&args.base_url);
    let adapter = ProviderAdapter {
        api: args.api,
        auth,
        max_tokens_field: match args.max_tokens_field {
            MaxField::MaxTokens => MaxTokensField::MaxTokens,
            MaxField::MaxCompletionTokens => MaxTokensField::MaxCompletionTokens,
        },
        include_usage: args.include_usage,
        extra_body,
        ..ProviderAdapter::open("once", &endpoint, &args.model)
    };
    Ok((adapter, Credentials::from_pairs(secrets)))
}

/// An `--api` value: one of the dialect names a spec's `api:` takes.
fn parse_api(name: &str) -> Result<Api, String> {
    Api::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Api::ALL.iter().map(|a| a.as_str()).collect();
        format!("unknown API dialect {name:?}; one of {}", names.join(", "))
    })
}

/// The `--tool` value: inline JSON when it starts with `{`, else a file's JSON; refused for a
/// dialect without tools.
fn once_tool(args: &OnceArgs) -> anyhow::Result<Option<ToolOffer>> {
    let Some(value) = &args.tool else {
        return Ok(None);
    };
    let inline = value.trim_start().starts_with('{');
    let (text, source) = if inline {
        (value.clone(), "--tool".to_string())
    } else {
        let text = std::fs::read_to_string(value)
            .with_context(|| format!("--tool: cannot read the tool file {value}"))?;
        (text, format!("--tool file {value}"))
    };
    let offer: ToolOffer = serde_json::from_str(&text).with_context(|| {
        format!(
            "{source}: expected a tool object {{\"name\", \"description\", \"parameters\", \"choice\": \"forced\"|\"auto\"}}"
        )
    })?;
    if !args.api.has_tools() {
        bail!(
            "--tool: the {} API has no tools; offer {:?} through openai-chat, openai-responses or anthropic-messages",
            args.api,
            offer.name
        );
    }
    Ok(Some(offer))
}

async fn once(args: OnceArgs) -> anyhow::Result<ExitCode> {
    let (adapter, credentials) = once_adapter(&args)?;
    let tool = once_tool(&args)?;
    let executor = Executor::new(
        adapter,
        RequestContract::reference(args.timeout_ms),
        &credentials,
    )?;
    let request = PlannedRequest {
        identity: RequestIdentity {
            request_id: "once".into(),
            provider: "once".into(),
            region: "local".into(),
            lane: "once".into(),
            ..RequestIdentity::default()
        },
        messages: vec![
            ChatMessage::text(Role::System, args.system.clone()),
            ChatMessage::text(Role::User, args.user.clone()),
        ],
        deadline_ms: args.timeout_ms,
        output: None,
        load: None,
        tool,
        tools: Vec::new(),
    };
    let execution = executor.execute(&request).await;
    let completed = execution.record.outcome == openbench_common::record::Outcome::Completed;
    let output = OnceOutput::of(&execution);
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut stdout, &output)?;
    } else {
        serde_json::to_writer_pretty(&mut stdout, &output)?;
    }
    writeln!(stdout)?;
    stdout.flush()?;
    Ok(if completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What `probe once` prints: the terminal record's fields with its events (offset,
/// classification and texts) under `events`. Serialised straight from borrowed data, so a
/// response with tens of thousands of events costs no copy of them.
#[derive(serde::Serialize)]
struct OnceOutput<'a> {
    #[serde(flatten)]
    record: &'a TerminalRecord,
    events: Vec<OnceEvent<'a>>,
}

/// One event as `probe once` prints it.
#[derive(serde::Serialize)]
struct OnceEvent<'a> {
    offset_ms: f64,
    classification: Classification,
    reasoning: &'a str,
    answer: &'a str,
}

impl<'a> OnceOutput<'a> {
    fn of(execution: &'a Execution) -> OnceOutput<'a> {
        OnceOutput {
            record: &execution.record,
            events: execution
                .events
                .iter()
                .map(|e| OnceEvent {
                    offset_ms: e.offset_ms,
                    classification: e.classification,
                    reasoning: &e.reasoning,
                    answer: &e.answer,
                })
                .collect(),
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let (declared, spec_providers) = declared_credentials(&args)?;
    let policy = EndpointPolicy::parse(&args.allow_endpoints)
        .context("--allow-endpoint")?
        .with_spec_defaults(&spec_providers);
    let unknown = policy.unknown_variables(&declared);
    if !unknown.is_empty() {
        bail!(
            "--allow-endpoint names {} which this probe does not hold (declare it with \
             --credential or --spec)",
            unknown.join(", ")
        );
    }
    // Names only: a variable missing now may be set in `.env` before the session opens.
    let names: Vec<String> = declared.iter().cloned().collect();
    if let Err(e) = Credentials::from_env(&names) {
        eprintln!("probe: warning: {e} (a session that needs one is refused)");
    }
    // The same digest the coordinator locks, so `Describe` can be checked against a run's lock.
    let code_digest = crate::cmd::runs::CODE_SHA256.to_string();
    let security = serve_security(&args)?;
    let ports = if args.health_listen.is_some() { 2 } else { 1 };
    if let Some(short) =
        openbench_inference::open_files::raise_limit(ports * args.max_unauthenticated + 256)
    {
        let warning = format!(
            "{short}: the connection caps need them (--max-unauthenticated per port + 256): \
             raise it (docs/faults.md)"
        );
        eprintln!("probe: warning: {warning}");
        tracing::warn!("{warning}");
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let exposure = Exposure {
        tls: security.tls.is_some(),
        token: security.token.is_some(),
        insecure_plaintext: args.insecure_plaintext,
    };
    let local = listener.local_addr()?;
    if let Some(warning) = check_exposure(local, exposure)? {
        eprintln!("{warning}");
        tracing::warn!("{warning}");
    }
    let holds = if names.is_empty() {
        "no credentials".to_string()
    } else {
        format!("credentials {}", names.join(", "))
    };
    let reach = if declared.is_empty() {
        String::new()
    } else {
        format!("; keys may reach: {}", policy.describe(&declared))
    };
    let handle = serve_secured(
        listener,
        ProbeConfig {
            region: args.region.clone(),
            credentials: CredentialSource::Environment {
                declared,
                dotenv: PathBuf::from(".env"),
            },
            endpoints: EndpointRules {
                local: BTreeMap::new(),
                policy,
            },
            code_digest,
        },
        security.clone(),
    )
    .await?;
    eprintln!(
        "probe: region {} serving {holds} on {} ({}, {}){reach}",
        args.region,
        handle.addr(),
        if security.tls.is_some() {
            "TLS"
        } else {
            "plaintext"
        },
        if security.token.is_some() {
            "token required"
        } else {
            "no token"
        },
    );
    let health = match &args.health_listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} (--health-listen)"))?;
            let health = openbench_probe::server::serve_health(listener, security.connections)?;
            eprintln!("probe: grpc.health.v1 on {}", health.addr());
            Some(health)
        }
        None => None,
    };
    super::wait_for_signal().await?;
    eprintln!("probe: shutting down");
    if let Some(health) = health {
        health.shutdown().await?;
    }
    handle.shutdown().await?;
    Ok(ExitCode::SUCCESS)
}

/// The credential variables `probe serve` may hand out: `--credential` names, plus the spec's
/// when `--spec` is given (whose region list must then hold `--region`); and the spec's
/// providers (none without `--spec`), whose endpoints are the default allowed ones.
fn declared_credentials(
    args: &ServeArgs,
) -> anyhow::Result<(BTreeSet<String>, Vec<ProviderAdapter>)> {
    let mut declared: BTreeSet<String> = args
        .credentials
        .iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    for name in &declared {
        if !is_variable_name(name) {
            bail!("--credential {name:?}: a variable name is [A-Za-z0-9_]");
        }
    }
    if let Some(path) = &args.spec {
        let loaded = LoadedSpec::load(path)?;
        let regions = loaded.spec.region_names();
        if !regions.contains(&args.region) {
            bail!(
                "spec {}: region {:?} is not declared (regions: {})",
                path.display(),
                args.region,
                regions.join(", ")
            );
        }
        declared.extend(loaded.spec.credential_names());
        return Ok((declared, loaded.spec.providers));
    }
    Ok((declared, Vec::new()))
}

/// TLS and the token of `probe serve`, from its flags and environment.
fn serve_security(args: &ServeArgs) -> anyhow::Result<ProbeSecurity> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            ServerTlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            }
            .load()?,
        ),
        _ => None,
    };
    let token = ProbeToken::load(args.token_file.as_deref(), TOKEN_ENV)?;
    Ok(ProbeSecurity {
        tls,
        token,
        connections: connection_limits(args)?,
    })
}

/// The limits on connections without the token, from `probe serve`'s flags.
fn connection_limits(args: &ServeArgs) -> anyhow::Result<ConnectionLimits> {
    if args.unauthenticated_timeout_s < args.handshake_timeout_s {
        bail!(
            "--unauthenticated-timeout-s {} is shorter than --handshake-timeout-s {}: a \
             connection needs its handshake before it can authenticate",
            args.unauthenticated_timeout_s,
            args.handshake_timeout_s
        );
    }
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(ConnectionLimits {
        handshake_timeout: Duration::from_secs(args.handshake_timeout_s),
        unauthenticated_timeout: Duration::from_secs(args.unauthenticated_timeout_s),
        max_unauthenticated: count(args.max_unauthenticated),
        max_unauthenticated_per_source: count(args.max_unauthenticated_per_source),
    })
}
