//! SQLite through rusqlite (SQLite compiled in: no system library).

use super::{Backend, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::path::Path;

/// A SQLite database file.
pub struct Sqlite {
    conn: rusqlite::Connection,
}

impl Sqlite {
    /// Opens or creates the file; waits up to 30 s for another writer's lock.
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| e.to_string())?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL;")
            .map_err(|e| e.to_string())?;
        Ok(Sqlite { conn })
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Owned(rusqlite::types::Value::Null),
            Value::Int(i) => ToSqlOutput::Owned(rusqlite::types::Value::Integer(*i)),
            Value::Real(x) => ToSqlOutput::Owned(rusqlite::types::Value::Real(*x)),
            Value::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

fn read(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into()),
    }
}

impl Backend for Sqlite {
    fn execute_batch(&mut self, sql: &str) -> Result<(), String> {
        self.conn.execute_batch(sql).map_err(|e| e.to_string())
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| e.to_string())?;
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(read(row.get_ref(i).map_err(|e| e.to_string())?));
            }
            out.push(values);
        }
        Ok(out)
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<Value>]) -> Result<(), String> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| e.to_string())?;
        for row in rows {
            stmt.execute(rusqlite::params_from_iter(row))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
