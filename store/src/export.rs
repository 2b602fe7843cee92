//! `export`: every table of the store as CSV or Parquet files that pandas, polars, DuckDB or a
//! spreadsheet open without our code. One file per table (`runs`, `lanes`, `requests`,
//! `metrics`), rows in primary-key order, columns as in the schema; NULL is an empty CSV field
//! and a Parquet null. Parquet files are written with the crate's low-level column writer,
//! uncompressed, one row group per table: strings as UTF-8 `BYTE_ARRAY`, integers `INT64`,
//! floats `DOUBLE`.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{self, Kind, TABLES, Table};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet.
    Parquet,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }
}

/// Writes one file per table into `out_dir` (created if needed); returns each path with its row
/// count.
pub fn export(
    store: &mut Store,
    format: Format,
    out_dir: &Path,
) -> Result<Vec<(PathBuf, usize)>, StoreError> {
    std::fs::create_dir_all(out_dir).map_err(|e| write_error(out_dir, e))?;
    let mut written = Vec::new();
    for table in &TABLES {
        let rows = store.query(&schema::select(table, false), &[])?;
        let path = out_dir.join(format!("{}.{}", table.name, format.extension()));
        let tmp = out_dir.join(format!(".{}.{}.tmp", table.name, format.extension()));
        match format {
            Format::Csv => write_csv(&tmp, table, &rows),
            Format::Parquet => write_parquet(&tmp, table, &rows),
        }
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            write_error(&path, e)
        })?;
        std::fs::rename(&tmp, &path).map_err(|e| write_error(&path, e))?;
        written.push((path, rows.len()));
    }
    Ok(written)
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Write {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

type Failure = Box<dyn std::error::Error>;

fn csv_field(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Int(i) => i.to_string(),
        // Shortest text that reads back as the same double.
        Value::Real(x) => format!("{x:?}"),
        Value::Text(t) => t.clone(),
    }
}

fn write_csv(path: &Path, table: &Table, rows: &[Vec<Value>]) -> Result<(), Failure> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record(table.columns.iter().map(|c| c.name))?;
    for row in rows {
        w.write_record(row.iter().map(csv_field))?;
    }
    w.flush()?;
    w.into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()
        .map_err(Into::into)
}

/// The Parquet schema of `table`.
pub fn parquet_schema(table: &Table) -> String {
    let fields: Vec<String> = table
        .columns
        .iter()
        .map(|c| {
            let repetition = if c.nullable { "optional" } else { "required" };
            let ty = match c.kind {
                Kind::Int => "int64",
                Kind::Real => "double",
                Kind::Text => "binary",
            };
            let logical = if c.kind == Kind::Text {
                " (STRING)"
            } else {
                ""
            };
            format!("  {repetition} {ty} {}{logical};", c.name)
        })
        .collect();
    format!("message {} {{\n{}\n}}", table.name, fields.join("\n"))
}

fn write_parquet(path: &Path, table: &Table, rows: &[Vec<Value>]) -> Result<(), Failure> {
    let schema = Arc::new(parse_message_type(&parquet_schema(table))?);
    let props = Arc::new(WriterProperties::builder().build());
    let file = std::fs::File::create(path)?;
    let mut writer = SerializedFileWriter::new(file, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut index = 0;
    while let Some(mut column) = group.next_column()? {
        let spec = table.columns[index];
        let cells = rows.iter().map(|r| r.get(index).unwrap_or(&Value::Null));
        let levels: Vec<i16> = cells
            .clone()
            .map(|v| i16::from(*v != Value::Null))
            .collect();
        let levels = spec.nullable.then_some(levels.as_slice());
        match spec.kind {
            Kind::Int => {
                let values: Vec<i64> = cells.filter_map(Value::int).collect();
                column
                    .typed::<Int64Type>()
                    .write_batch(&values, levels, None)?;
            }
            Kind::Real => {
                let values: Vec<f64> = cells.filter_map(Value::real).collect();
                column
                    .typed::<DoubleType>()
                    .write_batch(&values, levels, None)?;
            }
            Kind::Text => {
                let values: Vec<ByteArray> = cells
                    .filter_map(Value::text)
                    .map(|t| ByteArray::from(t.as_bytes().to_vec()))
                    .collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&values, levels, None)?;
            }
        }
        column.close()?;
        index += 1;
    }
    group.close()?;
    writer.into_inner()?.sync_all()?;
    Ok(())
}
