//! The two databases behind one small interface: SQLite (one file, no server) and PostgreSQL (a
//! team's server). Statements are written once, with `$1, $2, …` placeholders that both accept,
//! and column types (`BIGINT`, `DOUBLE PRECISION`, `TEXT`) that both read the same way.

mod location;
mod postgres;
mod sqlite;

use crate::StoreError;

/// One SQL value, as the store's columns hold them.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A 64-bit integer (`BIGINT`).
    Int(i64),
    /// A 64-bit float (`DOUBLE PRECISION`), stored bit for bit by both databases.
    Real(f64),
    /// Text.
    Text(String),
}

impl Value {
    /// The integer, or `None` for NULL or another type.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The float (an integer column read as a float converts), or `None`.
    pub fn real(&self) -> Option<f64> {
        match self {
            Value::Real(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
    /// The text, or `None`.
    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl From<Option<f64>> for Value {
    fn from(x: Option<f64>) -> Value {
        x.map_or(Value::Null, Value::Real)
    }
}
impl From<Option<u64>> for Value {
    fn from(x: Option<u64>) -> Value {
        x.map_or(Value::Null, |i| Value::Int(i as i64))
    }
}
impl From<Option<String>> for Value {
    fn from(x: Option<String>) -> Value {
        x.map_or(Value::Null, Value::Text)
    }
}
impl From<&str> for Value {
    fn from(x: &str) -> Value {
        Value::Text(x.to_string())
    }
}
impl From<String> for Value {
    fn from(x: String) -> Value {
        Value::Text(x)
    }
}
impl From<bool> for Value {
    fn from(x: bool) -> Value {
        Value::Int(i64::from(x))
    }
}
impl From<u64> for Value {
    fn from(x: u64) -> Value {
        Value::Int(x as i64)
    }
}
impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Real(x)
    }
}

/// What a database must do for the store: run a script, query, and run one statement for many
/// rows. Transactions are `BEGIN` / `COMMIT` / `ROLLBACK` scripts, which both understand.
pub trait Backend: Send {
    /// Runs statements separated by `;`, without parameters.
    fn execute_batch(&mut self, sql: &str) -> Result<(), String>;
    /// Runs one query and returns every row.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String>;
    /// Runs one statement once per row of parameters (prepared once).
    fn execute_many(&mut self, sql: &str, rows: &[Vec<Value>]) -> Result<(), String>;
}

/// An open store: a backend, the name errors use and the schema migrated to this build's version.
pub struct Store {
    backend: Box<dyn Backend>,
    name: String,
}

pub use location::{LocationError, describe};

impl Store {
    /// Opens (creating a SQLite file if needed) the store at `location` — a PostgreSQL URI
    /// (`postgres://` or `postgresql://`, any case) or keyword/value string (`host=… dbname=…`),
    /// else a SQLite file path (`sqlite:` prefix optional) — and applies any migration it lacks.
    /// A location of another form is refused, naming the form (never its text).
    pub fn open(location: &str) -> Result<Store, StoreError> {
        let (backend, name): (Box<dyn Backend>, String) = match location::parse(location) {
            Err(e) => return Err(StoreError::Location(e)),
            Ok(location::Location::Postgres(config, name)) => {
                let fail = |detail| StoreError::Database {
                    store: name.clone(),
                    detail,
                };
                (
                    Box::new(postgres::Postgres::connect(&config).map_err(fail)?),
                    name,
                )
            }
            Ok(location::Location::Sqlite(path)) => {
                let name = describe(location);
                let fail = |detail| StoreError::Database {
                    store: name.clone(),
                    detail,
                };
                (Box::new(sqlite::Sqlite::open(&path).map_err(fail)?), name)
            }
        };
        let mut store = Store { backend, name };
        crate::schema::migrate(&mut store)?;
        Ok(store)
    }

    /// The store's name in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn fail(&self, detail: String) -> StoreError {
        StoreError::Database {
            store: self.name.clone(),
            detail,
        }
    }

    /// Runs a parameterless script.
    pub fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.backend.execute_batch(sql).map_err(|e| self.fail(e))
    }

    /// Runs a query.
    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError> {
        self.backend.query(sql, params).map_err(|e| self.fail(e))
    }

    /// Runs one statement for many parameter rows.
    pub fn execute_many(&mut self, sql: &str, rows: &[Vec<Value>]) -> Result<(), StoreError> {
        self.backend
            .execute_many(sql, rows)
            .map_err(|e| self.fail(e))
    }

    /// Runs `work` in one transaction: committed when it returns `Ok`, rolled back otherwise.
    pub fn transaction<T>(
        &mut self,
        work: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.execute_batch("BEGIN")?;
        match work(self) {
            Ok(value) => {
                self.execute_batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                // The work's error is the one to report; a failed rollback ends the session.
                let _ = self.backend.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}
