//! The PostgreSQL test server (`deploy/postgres/test-server.sh`): a database of a test's own on it.
#![allow(clippy::unwrap_used)]

/// A fresh database `name` on the server of `url` (dropped first), and its URL.
pub fn own_database(url: &str, name: &str) -> String {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .unwrap();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let (base, query) = url.split_once('?').map_or((url, ""), |(b, q)| (b, q));
    let (server, _) = base.rsplit_once('/').unwrap();
    if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    }
}
