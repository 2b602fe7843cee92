//! The strict answer parser and the three family scorers on arbitrary answers: never panic, a
//! correct answer is schema-valid, and a text that is not one JSON value is never schema-valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_micro_single_task::scoring::strict_json::parse_strict;
use openbench_micro_single_task::scoring::{EvalClass, Family, GoldRef, score_answer};
use serde_json::json;
use std::sync::OnceLock;

fn golds() -> &'static [GoldRef; 3] {
    static GOLDS: OnceLock<[GoldRef; 3]> = OnceLock::new();
    GOLDS.get_or_init(|| {
        let contract = json!({
            "agreement_type": "saas_subscription", "effective_date": "2027-02-28",
            "initial_term_end_date": "2028-02-29", "auto_renews": true,
            "renewal_term_months": 0, "non_renewal_notice_days": 30, "payment_terms_days": 45,
            "termination_for_convenience": false, "termination_notice_days": null,
            "security_incident_notice_hours": 72
        });
        [
            GoldRef::MeetingNotes {
                value: "Oslo".into(),
                aliases: vec!["oslo, norway".into()],
            },
            GoldRef::TicketTriage {
                category: "bug".into(),
                priority: "p1".into(),
            },
            GoldRef::from_json(Family::ContractTermsExtraction, &contract, &[])
                .unwrap_or_else(|e| panic!("fuzz gold: {e}")),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_strict(text);
    for gold in golds() {
        let scored = score_answer(gold, text);
        if parsed.is_err() {
            assert_ne!(scored.classification, EvalClass::ValidResult);
            assert_ne!(scored.classification, EvalClass::IncorrectResult);
        }
    }
});
