//! Where a store lives, read from what the user wrote (`--store`, `OPENBENCH_STORE`) by real
//! parsers, never by string splitting: a PostgreSQL URI (`postgres://` or `postgresql://`, any
//! case of the scheme) is parsed by the `url` crate, so userinfo is only ever the authority's and
//! an `@` or `password=` in the query stays in the query; a libpq keyword/value string
//! (`host=… dbname=…`) by `postgres::Config`; `sqlite:PATH` and a plain path name a SQLite file.
//!
//! Nothing else falls through to SQLite: another scheme, a `postgres:` without `//`, a
//! keyword/value string that does not parse, or credentials without a scheme are refused, naming
//! the form and never repeating the text (which may hold a password). A PostgreSQL store names
//! itself by scheme, host, port and database only.

use openbench_common::untrusted_text::terminal;
use percent_encoding::percent_decode_str;
use postgres::config::Host;
use std::fmt::Write;
use std::str::FromStr;

/// A parsed store location.
pub enum Location {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL server: its connection settings (password included, never printed) and the
    /// name messages use.
    Postgres(Box<postgres::Config>, String),
}

/// Why a location was refused: the form it looks like and what is wrong, without its text.
#[derive(Debug, thiserror::Error)]
#[error("{form}: {detail}")]
pub struct LocationError {
    /// The form the location was read as ("PostgreSQL URI", "keyword/value string", …).
    pub form: &'static str,
    /// What is wrong with it.
    pub detail: String,
}

const URI: &str = "PostgreSQL URI";
const KEYWORDS: &str = "PostgreSQL keyword/value connection string";

fn refuse(form: &'static str, detail: impl Into<String>) -> LocationError {
    LocationError {
        form,
        detail: detail.into(),
    }
}

/// Reads `location` as one of the accepted forms, or refuses it naming the form.
pub fn parse(location: &str) -> Result<Location, LocationError> {
    if let Some(path) = strip_prefix_ignore_case(location, "sqlite:") {
        return Ok(Location::Sqlite(path.into()));
    }
    if let Some((scheme, _)) = location.split_once("://").filter(|(s, _)| is_scheme(s)) {
        let lower = scheme.to_ascii_lowercase();
        if lower != "postgres" && lower != "postgresql" {
            return Err(refuse(
                "store URL",
                format!(
                    "the scheme `{}` is not a store: use postgres:// or postgresql://, \
                     sqlite:PATH or a file path",
                    terminal(scheme)
                ),
            ));
        }
        return postgres_uri(&lower, &location[scheme.len()..]);
    }
    let head = location.split(':').next().unwrap_or_default();
    if location.contains(':')
        && matches!(
            head.to_ascii_lowercase().as_str(),
            "postgres" | "postgresql"
        )
    {
        return Err(refuse(
            URI,
            "a PostgreSQL URL starts with postgres:// or postgresql:// (the `//` is missing)",
        ));
    }
    if location.contains('=') {
        return keyword_value(location);
    }
    if location
        .split_once('@')
        .is_some_and(|(before, _)| before.contains(':'))
    {
        return Err(refuse(
            "store location",
            "it looks like user:password@host without a scheme: write postgres://… \
             (or sqlite:PATH for a file whose name holds `:` and `@`)",
        ));
    }
    Ok(Location::Sqlite(location.into()))
}

/// The name messages use for `location`: scheme, host, port and database of a PostgreSQL
/// store, the path of a SQLite one, or the form of a refused one — never a user or password.
pub fn describe(location: &str) -> String {
    match parse(location) {
        Ok(Location::Postgres(_, name)) => name,
        Ok(Location::Sqlite(path)) => terminal(&path.to_string_lossy()).into_owned(),
        Err(e) => format!("(a {} that cannot be read)", e.form),
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// A URI whose scheme (already lower-cased) is `scheme` and whose text after it is `rest`
/// (starting with `://`): parsed by `url`, then handed to `postgres::Config` as keyword/value
/// pairs, each value quoted, so the two parsers cannot disagree about where the password is.
fn postgres_uri(scheme: &str, rest: &str) -> Result<Location, LocationError> {
    let url = url::Url::parse(&format!("{scheme}{rest}"))
        .map_err(|e| refuse(URI, format!("does not parse: {e}")))?;
    if url.fragment().is_some() {
        return Err(refuse(
            URI,
            "it has a `#` fragment (percent-encode a `#` in a password as %23)",
        ));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    let decode = |text: &str, what: &str| {
        percent_decode_str(text)
            .decode_utf8()
            .map(|t| t.into_owned())
            .map_err(|_| refuse(URI, format!("its {what} is not UTF-8 once percent-decoded")))
    };
    if !url.username().is_empty() {
        pairs.push(("user".into(), decode(url.username(), "user")?));
    }
    if let Some(password) = url.password() {
        pairs.push(("password".into(), decode(password, "password")?));
    }
    if let Some(host) = url.host_str().filter(|h| !h.is_empty()) {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        pairs.push(("host".into(), decode(host, "host")?));
    }
    if let Some(port) = url.port() {
        pairs.push(("port".into(), port.to_string()));
    }
    let path = url.path().trim_start_matches('/');
    if !path.is_empty() {
        pairs.push(("dbname".into(), decode(path, "database name")?));
    }
    for param in url
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let Some((key, value)) = param.split_once('=') else {
            return Err(refuse(URI, "a query parameter has no `=`"));
        };
        if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || key.is_empty() {
            return Err(refuse(URI, "a query parameter's name is not a keyword"));
        }
        pairs.push((key.to_string(), decode(value, "query")?));
    }
    let mut keywords = String::new();
    for (key, value) in &pairs {
        let quoted = value.replace('\\', "\\\\").replace('\'', "\\'");
        let _ = write!(keywords, "{key}='{quoted}' ");
    }
    let config = postgres::Config::from_str(&keywords).map_err(|e| refuse(URI, safe(&e)))?;
    let name = name_of(scheme, &config);
    Ok(Location::Postgres(Box::new(config), name))
}

/// A libpq keyword/value string, parsed by `postgres::Config`.
fn keyword_value(location: &str) -> Result<Location, LocationError> {
    let config = postgres::Config::from_str(location).map_err(|e| {
        refuse(
            KEYWORDS,
            format!(
                "{} (a SQLite file whose name holds `=` takes the sqlite: prefix)",
                safe(&e)
            ),
        )
    })?;
    let name = name_of("postgres", &config);
    Ok(Location::Postgres(Box::new(config), name))
}

/// The client's parse error without any piece of the input: its option names and byte offsets
/// are kept; the character it quotes after "unexpected character" is dropped.
fn safe(error: &postgres::Error) -> String {
    let text = openbench_common::error_text::error_chain(error);
    match text.find(": expected `") {
        Some(cut) if text.contains("unexpected character") => text[..cut].to_string(),
        _ => text,
    }
}

/// `scheme://host[,host…]:port/dbname` from parsed settings (port and database as the client
/// will use them: 5432 and the user's name are its defaults).
fn name_of(scheme: &str, config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.to_string_lossy().into_owned(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    let port = if ports.is_empty() {
        String::new()
    } else {
        format!(":{}", ports.join(","))
    };
    let db = config.get_dbname().unwrap_or_default();
    let text = format!("{scheme}://{}{port}/{db}", hosts.join(","));
    terminal(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(location: &str) -> postgres::Config {
        match parse(location) {
            Ok(Location::Postgres(config, _)) => *config,
            Ok(Location::Sqlite(path)) => panic!("{location} read as SQLite {}", path.display()),
            Err(e) => panic!("{location}: {e}"),
        }
    }

    fn refused(location: &str) -> String {
        match parse(location) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{location} was accepted"),
        }
    }

    #[test]
    fn every_uri_form_is_named_by_scheme_host_port_and_database_only() {
        let cases = [
            (
                "postgres://bench:s3cret@db.example:5432/results?sslmode=disable",
                "postgres://db.example:5432/results",
            ),
            (
                "postgres://127.0.0.1:5433/db?password=Pw@X",
                "postgres://127.0.0.1:5433/db",
            ),
            (
                "postgres://127.0.0.1/db?application_name=a@b&password=PW",
                "postgres://127.0.0.1/db",
            ),
            ("POSTGRES://u:pw@h:1/d", "postgres://h:1/d"),
            ("PostgreSQL://u:pw@[::1]:7/d", "postgresql://[::1]:7/d"),
            (
                "host=127.0.0.1 port=5 dbname=d user=u password='se cret'",
                "postgres://127.0.0.1:5/d",
            ),
        ];
        for (location, name) in cases {
            assert_eq!(describe(location), name, "{location}");
        }
    }

    #[test]
    fn the_password_is_where_libpq_puts_it_and_nowhere_else() {
        let query = config("postgres://127.0.0.1/db?application_name=a@b&password=P%40W'\\");
        assert_eq!(query.get_password(), Some(&b"P@W'\\"[..]));
        assert_eq!(query.get_application_name(), Some("a@b"));
        assert_eq!(query.get_hosts(), [Host::Tcp("127.0.0.1".into())]);
        let userinfo = config("postgresql://bench:p%40ss+w@h/d");
        assert_eq!(userinfo.get_user(), Some("bench"));
        assert_eq!(userinfo.get_password(), Some(&b"p@ss+w"[..]));
        let keywords = config("user=bench password='it\\'s @h' host=h");
        assert_eq!(keywords.get_password(), Some(&b"it's @h"[..]));
        assert_eq!(keywords.get_hosts(), [Host::Tcp("h".into())]);
    }

    #[test]
    fn other_forms_are_refused_naming_the_form_and_only_paths_are_sqlite() {
        let cases = [
            (
                "postgres://bench:s3cret/results",
                "PostgreSQL URI: does not parse: invalid port number",
            ),
            (
                "postgres://u:pa#ss@h/d",
                "PostgreSQL URI: does not parse: invalid port number",
            ),
            (
                "postgres://h/d#s3cret",
                "PostgreSQL URI: it has a `#` fragment (percent-encode a `#` in a password as %23)",
            ),
            (
                "postgres://h/d?s3cret",
                "PostgreSQL URI: a query parameter has no `=`",
            ),
            (
                "postgres:bench:s3cret@h/d",
                "PostgreSQL URI: a PostgreSQL URL starts with postgres:// or postgresql:// (the `//` is missing)",
            ),
            (
                "mysql://u:s3cret@h/d",
                "store URL: the scheme `mysql` is not a store: use postgres:// or postgresql://, sqlite:PATH or a file path",
            ),
            (
                "bench:s3cret@h/d",
                "store location: it looks like user:password@host without a scheme: write postgres://… (or sqlite:PATH for a file whose name holds `:` and `@`)",
            ),
            (
                "host=h password='s3cret",
                "PostgreSQL keyword/value connection string: invalid connection string: unterminated quoted connection parameter value (a SQLite file whose name holds `=` takes the sqlite: prefix)",
            ),
            (
                "host=h s3cret word=1",
                "PostgreSQL keyword/value connection string: invalid connection string: unexpected character at byte 14 (a SQLite file whose name holds `=` takes the sqlite: prefix)",
            ),
            (
                "host=h pasword=s3cret",
                "PostgreSQL keyword/value connection string: invalid connection string: unknown option `pasword` (a SQLite file whose name holds `=` takes the sqlite: prefix)",
            ),
        ];
        for (location, message) in cases {
            let text = refused(location);
            assert_eq!(text, message, "{location}");
            assert!(!text.contains("s3cret"), "{text}");
            assert!(!describe(location).contains("s3cret"));
        }
        for (location, path) in [
            ("results.sqlite", "results.sqlite"),
            ("sqlite:a=b.db", "a=b.db"),
            ("SQLite:x@y:z", "x@y:z"),
        ] {
            match parse(location) {
                Ok(Location::Sqlite(p)) => assert_eq!(p, std::path::Path::new(path)),
                _ => panic!("{location} is not SQLite"),
            }
        }
    }
}
