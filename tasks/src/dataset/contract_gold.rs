//! The gold of a contract-terms extraction row: ten fields, each checked for its type and range,
//! every problem reported through the loader's `fail` (file, line and field).

use super::load::show;
use super::{AgreementType, ContractGold, is_iso_date};
use serde_json::{Map, Value};

/// The contract gold of one row, or `None` after reporting every bad field to `fail`.
pub(super) fn parse_contract(
    gold: &Map<String, Value>,
    fail: &mut impl FnMut(&str, String) -> Option<()>,
) -> Option<ContractGold> {
    let mut ok = true;
    let agreement_type = gold
        .get("agreement_type")
        .and_then(Value::as_str)
        .and_then(AgreementType::parse);
    if agreement_type.is_none() {
        ok = false;
        fail(
            "agreement_type",
            format!(
                "must be one of saas_subscription, software_license, support_maintenance, \
                 technology_services; found {}",
                show(gold.get("agreement_type"))
            ),
        );
    }
    let mut date = |key: &str| match gold.get(key) {
        Some(Value::String(s)) if is_iso_date(s) => s.clone(),
        other => {
            ok = false;
            fail(
                key,
                format!("must be a real YYYY-MM-DD date, found {}", show(other)),
            );
            String::new()
        }
    };
    let effective_date = date("effective_date");
    let initial_term_end_date = date("initial_term_end_date");
    let mut boolean = |key: &str| match gold.get(key) {
        Some(Value::Bool(b)) => *b,
        other => {
            ok = false;
            fail(
                key,
                format!("must be a JSON boolean, found {}", show(other)),
            );
            false
        }
    };
    let auto_renews = boolean("auto_renews");
    let termination_for_convenience = boolean("termination_for_convenience");
    let mut integer = |key: &str| match gold.get(key) {
        Some(Value::Null) => None,
        Some(Value::Number(n)) if n.is_i64() && n.as_i64().unwrap_or(-1) >= 0 => n.as_i64(),
        other => {
            ok = false;
            fail(
                key,
                format!(
                    "must be a non-negative JSON integer or null, found {}",
                    show(other)
                ),
            );
            None
        }
    };
    let renewal_term_months = integer("renewal_term_months");
    let non_renewal_notice_days = integer("non_renewal_notice_days");
    let payment_terms_days = integer("payment_terms_days");
    let termination_notice_days = integer("termination_notice_days");
    let security_incident_notice_hours = integer("security_incident_notice_hours");
    if ok && initial_term_end_date <= effective_date {
        ok = false;
        fail(
            "initial_term_end_date",
            format!("{initial_term_end_date} is not after effective_date {effective_date}"),
        );
    }
    if !ok {
        return None;
    }
    Some(ContractGold {
        agreement_type: agreement_type?,
        effective_date,
        initial_term_end_date,
        auto_renews,
        renewal_term_months,
        non_renewal_notice_days,
        payment_terms_days,
        termination_for_convenience,
        termination_notice_days,
        security_incident_notice_hours,
    })
}
