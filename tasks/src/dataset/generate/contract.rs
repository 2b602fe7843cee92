//! contract-terms-extraction: a short commercial agreement with ten fields to extract.
//!
//! Decoys: a signing date before the effective date, a reference to another agreement type, a
//! late-payment suspension period next to the payment terms, a breach cure period next to the
//! convenience notice, a support response time in hours next to the incident notice, and an
//! amendment that supersedes values stated in the body ("changed from 60 days to 90 days").

use super::rng::Rng;
use super::text::{random_date, shift, spelled, uk, us};
use super::words::{COMPANIES, CUSTOMERS, PRODUCTS};
use super::{Draft, Gold};
use crate::dataset::{AgreementType, ContractGold};
use serde_json::json;
use time::Date;

const SYSTEM: &str = "You extract terms from a contract. Return only a JSON object with exactly \
these ten keys:\n\
- \"agreement_type\": one of \"saas_subscription\", \"software_license\", \"support_maintenance\", \
\"technology_services\", from the agreement's own title;\n\
- \"effective_date\": the Effective Date, as \"YYYY-MM-DD\";\n\
- \"initial_term_end_date\": the last day of the initial term, as \"YYYY-MM-DD\";\n\
- \"auto_renews\": true if the agreement renews automatically, else false;\n\
- \"renewal_term_months\": length of each automatic renewal term in months (integer), or null if it does not renew automatically;\n\
- \"non_renewal_notice_days\": days of notice needed to stop an automatic renewal (integer), or null;\n\
- \"payment_terms_days\": days after the invoice date within which invoices must be paid (integer), or null if the contract does not say;\n\
- \"termination_for_convenience\": true if a party may terminate without cause, else false;\n\
- \"termination_notice_days\": days of notice for termination for convenience (integer), or null if there is none;\n\
- \"security_incident_notice_hours\": hours within which the provider must notify the customer of a security incident (integer), or null if the contract has no such obligation.\n\
Where an amendment changes a term, use the amended value. Integers are JSON numbers, booleans are \
JSON true/false, missing values are JSON null. No other keys, text or code fences.";

const TITLES: &[(AgreementType, &[&str])] = &[
    (
        AgreementType::SaasSubscription,
        &[
            "SAAS SUBSCRIPTION AGREEMENT",
            "CLOUD SERVICES SUBSCRIPTION AGREEMENT",
        ],
    ),
    (
        AgreementType::SoftwareLicense,
        &[
            "SOFTWARE LICENSE AGREEMENT",
            "ENTERPRISE SOFTWARE LICENSE AGREEMENT",
        ],
    ),
    (
        AgreementType::SupportMaintenance,
        &[
            "SUPPORT AND MAINTENANCE AGREEMENT",
            "SOFTWARE MAINTENANCE AND SUPPORT AGREEMENT",
        ],
    ),
    (
        AgreementType::TechnologyServices,
        &[
            "TECHNOLOGY SERVICES AGREEMENT",
            "IT PROFESSIONAL SERVICES AGREEMENT",
        ],
    ),
];
const STATES: &[&str] = &[
    "Delaware",
    "Ontario",
    "New York",
    "Washington",
    "Texas",
    "Colorado",
];

/// Draws one contract row.
pub fn draft(rng: &mut Rng) -> Draft {
    let (agreement_type, titles) = *rng.pick(TITLES);
    let title = *rng.pick(titles);
    let provider = *rng.pick(COMPANIES);
    let customer = *rng.pick(CUSTOMERS);
    let product = *rng.pick(PRODUCTS);
    let uk_dates = rng.chance(35);
    let fmt = |d: Date| if uk_dates { uk(d) } else { us(d) };
    let spell = rng.chance(60);

    let effective = random_date(rng, 2025, 900);
    let signed = shift(effective, -rng.range(3, 40));
    let term_months = *rng.pick(&[12_i64, 24, 36]);
    let mut term_end = shift(effective, term_months * 365 / 12 + rng.range(-3, 3));
    let auto_renews = rng.chance(65);
    let renewal_months = auto_renews.then(|| *rng.pick(&[12_i64, 24, 6]));
    let mut non_renewal = auto_renews.then(|| *rng.pick(&[30_i64, 45, 60, 90]));
    let mut payment = (!rng.chance(15)).then(|| *rng.pick(&[15_i64, 30, 45, 60]));
    let tfc = rng.chance(55);
    let mut tfc_notice = tfc.then(|| *rng.pick(&[30_i64, 60, 90, 120]));
    let mut security = (!rng.chance(30)).then(|| *rng.pick(&[24_i64, 48, 72]));
    let cure = *rng.pick(&[10_i64, 15, 30, 45]);
    let suspend = *rng.pick(&[10_i64, 15, 20, 45]);
    let support_hours = *rng.pick(&[1_i64, 2, 4, 8]);

    let mut s = Vec::new();
    s.push(title.to_string());
    s.push(String::new());
    s.push(format!(
        "This {} (the \"Agreement\") is made between {provider}, a {} company (\"Provider\"), and {customer} (\"Customer\"). It is effective as of {} (the \"Effective Date\") and was signed by both parties on {}.",
        title_case(title), rng.pick(STATES), fmt(effective), fmt(signed)
    ));
    s.push(String::new());
    s.push(format!("1. Scope. {}", scope(rng, agreement_type, product)));
    let renewal = match (renewal_months, non_renewal) {
        (Some(m), Some(d)) => {
            let period = if m == 12 && rng.chance(50) {
                format!("{} year", spelled(1, spell))
            } else {
                format!("{} month", spelled(m, spell))
            };
            if rng.chance(50) {
                format!("Thereafter, this Agreement renews automatically for successive {period} renewal terms unless either party gives written notice of non-renewal at least {} days before the end of the then-current term.", spelled(d, spell))
            } else {
                format!("At the end of the initial term, this Agreement will automatically renew for additional {period} periods unless a party notifies the other in writing of its intention not to renew no later than {} days before expiry.", spelled(d, spell))
            }
        }
        _ => "This Agreement does not renew automatically; any renewal requires a written amendment signed by both parties.".to_string(),
    };
    s.push(format!(
        "2. Term. The initial term begins on the Effective Date and ends on {}. {renewal}",
        fmt(term_end)
    ));
    let pay = match payment {
        Some(d) if rng.chance(50) => format!(
            "Customer shall pay each undisputed invoice within {} days of the invoice date.",
            spelled(d, spell)
        ),
        Some(d) => format!("Payment terms are net {d} days from the invoice date."),
        None => "Fees are payable as set out in the applicable Order Form.".to_string(),
    };
    s.push(format!(
        "3. Fees and Payment. {pay} Overdue amounts accrue interest at 1.5% per month, and Provider may suspend performance if an amount remains unpaid {} days after a written reminder.",
        spelled(suspend, spell)
    ));
    let convenience = match tfc_notice {
        Some(d) => {
            if rng.chance(50) {
                format!("Either party may terminate this Agreement for convenience on {} days' prior written notice to the other party.", spelled(d, spell))
            } else {
                format!("Customer may terminate this Agreement without cause by giving at least {} days' written notice.", spelled(d, spell))
            }
        }
        None => "Neither party may terminate this Agreement for convenience before the end of the then-current term.".to_string(),
    };
    s.push(format!(
        "4. Termination. {convenience} Either party may terminate this Agreement for material breach if the breach remains uncured {} days after written notice of it.",
        spelled(cure, spell)
    ));
    let data = match security {
        Some(h) => {
            if rng.chance(50) {
                format!("Provider shall notify Customer without undue delay, and in any event within {} hours, after becoming aware of a Security Incident affecting Customer Data.", spelled(h, spell))
            } else {
                format!("Provider will report any confirmed Security Incident to Customer within {} hours of discovery.", spelled(h, spell))
            }
        }
        None => "Each party shall protect the other party's Confidential Information with at least reasonable care.".to_string(),
    };
    s.push(format!(
        "5. Data Protection and Support. {data} Provider will respond to Severity 1 support requests within {} hours.",
        spelled(support_hours, spell)
    ));
    let mut general = vec![
        format!("This Agreement is governed by the laws of the State of {}.", rng.pick(STATES)),
        "Notices must be in writing and sent to the addresses on the signature page.".to_string(),
        "Neither party may assign this Agreement without the other party's prior written consent, except to a successor of its business.".to_string(),
        "Each party's total liability is limited to the fees paid in the twelve months before the claim.".to_string(),
        "This Agreement, with its Order Forms, is the entire agreement of the parties on its subject.".to_string(),
        format!("Provider may subcontract hosting of {product} to reputable data centre operators."),
    ];
    rng.shuffle(&mut general);
    general.truncate(rng.range(2, 6) as usize);
    s.push(format!("6. General. {}", general.join(" ")));

    // Amendments supersede body values.
    let mut amendments = Vec::new();
    let amendment_count = rng.range(0, 2) as usize;
    for field in rng.sample(&[0, 1, 2, 3, 4], amendment_count) {
        match field {
            0 if payment.is_some() => {
                let old = payment.unwrap_or(0);
                let new = pick_other(rng, &[30, 45, 60, 90], old);
                amendments.push(format!("Section 3 is amended so that invoices are payable within {new} days of the invoice date instead of {old} days."));
                payment = Some(new);
            }
            1 if tfc_notice.is_some() => {
                let old = tfc_notice.unwrap_or(0);
                let new = pick_other(rng, &[30, 45, 60, 90, 120], old);
                amendments.push(format!("The notice period for termination for convenience is changed from {old} days to {new} days."));
                tfc_notice = Some(new);
            }
            2 if security.is_some() => {
                let old = security.unwrap_or(0);
                let new = pick_other(rng, &[24, 36, 48, 72], old);
                amendments.push(format!("The Security Incident notification period is changed from {old} hours to {new} hours."));
                security = Some(new);
            }
            3 if non_renewal.is_some() => {
                let old = non_renewal.unwrap_or(0);
                let new = pick_other(rng, &[30, 45, 60, 90], old);
                amendments.push(format!(
                    "The non-renewal notice period is changed from {old} days to {new} days."
                ));
                non_renewal = Some(new);
            }
            4 => {
                let new = shift(term_end, rng.range(30, 200));
                amendments.push(format!(
                    "The initial term is extended to end on {} instead of {}.",
                    fmt(new),
                    fmt(term_end)
                ));
                term_end = new;
            }
            _ => {}
        }
    }
    if !amendments.is_empty() {
        let dated = shift(effective, rng.range(20, 200));
        s.push(String::new());
        s.push(format!("AMENDMENT No. 1 (dated {})", fmt(dated)));
        s.push(amendments.join(" "));
    }

    let gold = ContractGold {
        agreement_type,
        effective_date: super::text::iso(effective),
        initial_term_end_date: super::text::iso(term_end),
        auto_renews,
        renewal_term_months: renewal_months,
        non_renewal_notice_days: non_renewal,
        payment_terms_days: payment,
        termination_for_convenience: tfc,
        termination_notice_days: tfc_notice,
        security_incident_notice_hours: security,
    };
    let user = format!(
        "Extract the contract terms from the agreement below.\n\n{}\n",
        s.join("\n")
    );
    Draft {
        system: SYSTEM.to_string(),
        user,
        output_schema: schema(),
        gold: Gold::Contract(gold),
        aliases: Vec::new(),
        kind: if amendment_count > 0 {
            "amended"
        } else {
            "plain"
        },
    }
}

fn pick_other(rng: &mut Rng, options: &[i64], old: i64) -> i64 {
    let others: Vec<i64> = options.iter().copied().filter(|&o| o != old).collect();
    *rng.pick(&others)
}

fn title_case(title: &str) -> String {
    title
        .split(' ')
        .map(|w| match w {
            "AND" => "and".to_string(),
            "SAAS" => "SaaS".to_string(),
            "IT" => "IT".to_string(),
            _ => {
                let lower = w.to_lowercase();
                super::text::cap(&lower)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn scope(rng: &mut Rng, kind: AgreementType, product: &str) -> String {
    let other = match kind {
        AgreementType::SupportMaintenance => "the Software License Agreement between the parties",
        AgreementType::SoftwareLicense => "a separate Support and Maintenance Agreement",
        AgreementType::SaasSubscription => "a separate Technology Services Agreement",
        AgreementType::TechnologyServices => "the SaaS Subscription Agreement between the parties",
    };
    let main = match kind {
        AgreementType::SaasSubscription => format!(
            "Provider grants Customer access to the hosted {product} platform for the number of users in the Order Form."
        ),
        AgreementType::SoftwareLicense => format!(
            "Provider grants Customer a non-exclusive licence to install and use {product} on Customer's own servers."
        ),
        AgreementType::SupportMaintenance => format!(
            "Provider will maintain Customer's installation of {product}, supply updates and answer support requests."
        ),
        AgreementType::TechnologyServices => format!(
            "Provider will perform implementation, integration and consulting services for Customer's rollout of {product}."
        ),
    };
    if rng.chance(60) {
        format!("{main} Related work is covered by {other}, which this Agreement does not change.")
    } else {
        main
    }
}

fn schema() -> serde_json::Value {
    let int_or_null = json!({"type": ["integer", "null"]});
    json!({
        "type": "object",
        "properties": {
            "agreement_type": {"type": "string", "enum": ["saas_subscription", "software_license", "support_maintenance", "technology_services"]},
            "effective_date": {"type": "string", "format": "date"},
            "initial_term_end_date": {"type": "string", "format": "date"},
            "auto_renews": {"type": "boolean"},
            "renewal_term_months": int_or_null,
            "non_renewal_notice_days": int_or_null,
            "payment_terms_days": int_or_null,
            "termination_for_convenience": {"type": "boolean"},
            "termination_notice_days": int_or_null,
            "security_incident_notice_hours": int_or_null,
        },
        "required": crate::dataset::CONTRACT_FIELDS,
        "additionalProperties": false,
    })
}
