//! Gold answers as scoring needs them, independent of how a dataset file spells them.

use crate::dataset::{AgreementType, Category, Gold, Priority};
pub use crate::dataset::{CONTRACT_FIELDS, Family};
use serde_json::Value;

/// The answer fields whose correctness is kept per evaluation, in a fixed order.
pub fn family_fields(family: Family) -> &'static [&'static str] {
    match family {
        Family::MeetingNotesLookup => &["answer"],
        Family::TicketTriage => &["category", "priority"],
        Family::ContractTermsExtraction => &CONTRACT_FIELDS,
    }
}

/// Ticket categories (METHODOLOGY §5).
pub fn ticket_categories() -> [&'static str; 4] {
    Category::ALL.map(Category::as_str)
}
/// Ticket priorities (METHODOLOGY §5).
pub fn ticket_priorities() -> [&'static str; 4] {
    Priority::ALL.map(Priority::as_str)
}
/// Contract agreement types (METHODOLOGY §5).
pub fn agreement_types() -> [&'static str; 4] {
    AgreementType::ALL.map(AgreementType::as_str)
}
/// Contract fields that must be ISO dates.
pub const CONTRACT_DATE_FIELDS: [&str; 2] = ["effective_date", "initial_term_end_date"];
/// Contract fields that must be JSON booleans.
pub const CONTRACT_BOOL_FIELDS: [&str; 2] = ["auto_renews", "termination_for_convenience"];

/// The expected answer of one item.
#[derive(Debug, Clone, PartialEq)]
pub enum GoldRef {
    /// Canonical answer and accepted aliases.
    MeetingNotes {
        /// Canonical answer.
        value: String,
        /// Other accepted spellings.
        aliases: Vec<String>,
    },
    /// Exact category and priority.
    TicketTriage {
        /// Category.
        category: String,
        /// Priority.
        priority: String,
    },
    /// The ten typed contract values, keyed by field name (schema-valid JSON values).
    Contract(serde_json::Map<String, Value>),
}

impl GoldRef {
    /// The scoring view of a dataset row's typed gold and aliases.
    pub fn from_gold(gold: &Gold, aliases: &[String]) -> GoldRef {
        match gold {
            Gold::MeetingNotes { answer } => GoldRef::MeetingNotes {
                value: answer.clone(),
                aliases: aliases.to_vec(),
            },
            Gold::TicketTriage(t) => GoldRef::TicketTriage {
                category: t.category.as_str().to_string(),
                priority: t.priority.as_str().to_string(),
            },
            Gold::Contract(c) => match c.to_json() {
                Value::Object(map) => GoldRef::Contract(map),
                _ => GoldRef::Contract(serde_json::Map::new()),
            },
        }
    }

    /// The family this gold belongs to.
    pub fn family(&self) -> Family {
        match self {
            GoldRef::MeetingNotes { .. } => Family::MeetingNotesLookup,
            GoldRef::TicketTriage { .. } => Family::TicketTriage,
            GoldRef::Contract(_) => Family::ContractTermsExtraction,
        }
    }

    /// Reads gold from its JSON form: a meeting-notes gold is a string or an object with
    /// `value` (or `answer`); ticket and contract gold are the expected answer objects. Contract
    /// gold must itself pass the answer schema.
    pub fn from_json(family: Family, gold: &Value, aliases: &[String]) -> Result<GoldRef, String> {
        match family {
            Family::MeetingNotesLookup => {
                let value = match gold {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(map) => map
                        .get("value")
                        .or_else(|| map.get("answer"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    _ => None,
                };
                let value = value.ok_or_else(|| {
                    "gold: expected a string or an object with a string `value`".to_string()
                })?;
                Ok(GoldRef::MeetingNotes {
                    value,
                    aliases: aliases.to_vec(),
                })
            }
            Family::TicketTriage => {
                let get = |key: &str| {
                    gold.get(key)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| format!("gold.{key}: expected a string"))
                };
                Ok(GoldRef::TicketTriage {
                    category: get("category")?,
                    priority: get("priority")?,
                })
            }
            Family::ContractTermsExtraction => {
                let map = gold
                    .as_object()
                    .ok_or_else(|| "gold: expected an object".to_string())?;
                if let Err(problem) = super::schema::check_contract(map) {
                    return Err(format!("gold: {}", problem.message));
                }
                Ok(GoldRef::Contract(map.clone()))
            }
        }
    }
}
