//! PostgreSQL through the synchronous `postgres` client. Values are bound by the type the server
//! expects for each parameter, so one [`Value`] enum serves every column.

use super::{Backend, Value};
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls};

/// A connection to a PostgreSQL database.
pub struct Postgres {
    client: Client,
}

impl Postgres {
    /// Connects with `config` (no TLS: a team's store on a private network or loopback). The
    /// client's errors never repeat the password.
    pub fn connect(config: &postgres::Config) -> Result<Postgres, String> {
        let client = config
            .connect(NoTls)
            .map_err(|e| openbench_common::error_text::error_chain(&e))?;
        Ok(Postgres { client })
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Value::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Value::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Value::Real(x), &Type::FLOAT8) => x.to_sql(ty, out),
            (Value::Text(t), _) => t.as_str().to_sql(ty, out),
            (v, ty) => Err(format!("cannot bind {v:?} to a {ty} parameter").into()),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT8 | Type::INT4 | Type::FLOAT8 | Type::TEXT | Type::VARCHAR
        )
    }

    to_sql_checked!();
}

fn read(row: &postgres::Row, i: usize) -> Result<Value, String> {
    let ty = row.columns()[i].type_();
    let value = match *ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|x| Value::Int(i64::from(x)))),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real)),
        _ => row
            .try_get::<_, Option<String>>(i)
            .map(|v| v.map(Value::Text)),
    };
    value
        .map(|v| v.unwrap_or(Value::Null))
        .map_err(|e| e.to_string())
}

fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Backend for Postgres {
    fn execute_batch(&mut self, sql: &str) -> Result<(), String> {
        self.client.batch_execute(sql).map_err(|e| e.to_string())
    }

    fn query(&mut self, sql: &str, values: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let rows = self
            .client
            .query(sql, &params(values))
            .map_err(|e| e.to_string())?;
        rows.iter()
            .map(|row| (0..row.len()).map(|i| read(row, i)).collect())
            .collect()
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<Value>]) -> Result<(), String> {
        let stmt = self.client.prepare(sql).map_err(|e| e.to_string())?;
        for row in rows {
            self.client
                .execute(&stmt, &params(row))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
