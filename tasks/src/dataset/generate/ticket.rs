//! ticket-triage: one TARGET ticket among earlier tickets from the same customer.
//!
//! Distractors: the context tickets (with their own, already decided labels and cue sentences),
//! the customer's self-selected severity (unreliable by rule) and alarming subject lines.

use super::rng::Rng;
use super::text::{random_date, shift, us};
use super::words::{CUSTOMERS, FIRST_NAMES, LAST_NAMES, PRODUCTS};
use super::{Draft, Gold};
use crate::dataset::{Category, Priority, TicketGold};
use serde_json::json;
use time::Date;

const SYSTEM: &str = "You triage customer support tickets. Return only a JSON object with exactly \
two keys: {\"category\": \"<category>\", \"priority\": \"<priority>\"}.\n\
category is one of:\n\
- \"bug\": something that exists in the product is broken or behaves incorrectly (including cosmetic defects);\n\
- \"feature\": a request for a capability the product does not have;\n\
- \"improvement\": a request to change something that already works as designed;\n\
- \"customer_support\": an account, billing or how-to matter that needs help, not a product change.\n\
priority is one of (apply the first rule that matches):\n\
- \"p0\": many customers are affected and there is no workaround;\n\
- \"p1\": one customer or team is completely blocked and there is no workaround;\n\
- \"p2\": there is a workaround, or the request states a date by which it is needed;\n\
- \"p3\": everything else (cosmetic issues, questions, requests without a date).\n\
Triage only the ticket marked [TARGET]. Ignore the customer-selected severity and the labels of \
earlier tickets. Use lowercase values exactly as listed; no other keys, text or code fences.";

const AREAS: &[&str] = &[
    "CSV export",
    "invoice PDF download",
    "calendar sync",
    "bulk user import",
    "dashboard filter panel",
    "webhook delivery",
    "report scheduler",
    "global search",
    "mobile push notification",
    "time-off approval flow",
    "audit log viewer",
    "shipping label printer",
];
const SYMPTOMS: &[&str] = &[
    "returns an error 500",
    "times out after about a minute",
    "produces empty files",
    "shows the wrong totals",
    "logs the user out immediately",
    "duplicates every entry",
];
const CAPABILITIES: &[&str] = &[
    "export reports to Parquet",
    "set different approval chains per department",
    "send scheduled reports in each recipient's time zone",
    "attach photos to tasks from the mobile app",
    "restrict API keys to an IP range",
    "share dashboards with external guests",
    "show the portal in Portuguese",
    "merge duplicate contacts in one step",
];
const SLOWNESS: &[&str] = &[
    "takes about four minutes for a 2,000-row report",
    "needs eleven clicks for a routine change",
    "lets us pick only one filter at a time",
    "resets the column order on every visit",
    "asks for the same confirmation twice",
];
const SUPPORT_ASKS: &[&str] = &[
    "a copy of last quarter's invoices for our auditors",
    "to change the billing contact to our new finance manager",
    "to move twelve seats from our annual plan to the monthly plan",
    "an updated W-9 and a signed data processing addendum",
];
const HOW_TO: &[&str] = &[
    "How do we rename a workspace without losing its history?",
    "Where can an admin see who changed a user's role?",
    "Is there a way to set a default currency per team?",
    "How do I invite a contractor with read-only access?",
];
const TEAMS: &[&str] = &[
    "finance",
    "warehouse",
    "dispatch",
    "HR",
    "front desk",
    "sales",
];
const REGIONS: &[&str] = &["EU West", "US East", "Asia Pacific", "Canada Central"];

/// The combinations the rubric allows, with how they are rendered.
const COMBOS: &[(Category, Priority)] = &[
    (Category::Bug, Priority::P0),
    (Category::Bug, Priority::P1),
    (Category::Bug, Priority::P2),
    (Category::Bug, Priority::P3),
    (Category::Feature, Priority::P2),
    (Category::Feature, Priority::P3),
    (Category::Improvement, Priority::P2),
    (Category::Improvement, Priority::P3),
    (Category::CustomerSupport, Priority::P1),
    (Category::CustomerSupport, Priority::P2),
    (Category::CustomerSupport, Priority::P3),
];

struct Ctx<'a> {
    product: &'a str,
    day: Date,
}

/// Draws one ticket-triage row.
pub fn draft(rng: &mut Rng) -> Draft {
    let product = *rng.pick(PRODUCTS);
    let customer = *rng.pick(CUSTOMERS);
    let day = random_date(rng, 2026, 700);
    let ctx = Ctx { product, day };
    let (category, priority) = *rng.pick(COMBOS);
    let context_count = rng.range(1, 3) as usize;
    let target_at = rng.below(context_count + 1);
    let mut blocks = Vec::new();
    let mut number = rng.range(40_000, 90_000);
    for i in 0..=context_count {
        number += rng.range(3, 400);
        let requester = format!("{} {}", rng.pick(FIRST_NAMES), rng.pick(LAST_NAMES));
        if i == target_at {
            let severity = rng.pick(&["Urgent", "High", "Normal", "Low"]);
            let (subject, body) = render(rng, &ctx, category, priority);
            blocks.push(format!(
                "[TARGET] Ticket #{number}\nFrom: {requester}, {customer}\nCustomer-selected severity: {severity}\nSubject: {subject}\n{body}"
            ));
        } else {
            let (c, p) = *rng.pick(COMBOS);
            let (subject, body) = render(rng, &ctx, c, p);
            let opened = us(shift(day, -rng.range(10, 200)));
            blocks.push(format!(
                "[CONTEXT] Ticket #{number}, opened {opened}, resolved as {}/{}\nFrom: {requester}, {customer}\nSubject: {subject}\n{body}",
                c.as_str(),
                p.as_str()
            ));
        }
    }
    let user = format!(
        "Triage the ticket marked [TARGET]. The other tickets come from the same customer and are \
         shown for context only.\n\n{}\n",
        blocks.join("\n\n")
    );
    Draft {
        system: SYSTEM.to_string(),
        user,
        output_schema: json!({
            "type": "object",
            "properties": {
                "category": {"type": "string", "enum": ["bug", "feature", "improvement", "customer_support"]},
                "priority": {"type": "string", "enum": ["p0", "p1", "p2", "p3"]},
            },
            "required": ["category", "priority"],
            "additionalProperties": false,
        }),
        gold: Gold::TicketTriage(TicketGold { category, priority }),
        aliases: Vec::new(),
        kind: combo_kind(category, priority),
    }
}

fn combo_kind(c: Category, p: Priority) -> &'static str {
    match (c, p) {
        (Category::Bug, Priority::P0) => "bug_p0",
        (Category::Bug, Priority::P1) => "bug_p1",
        (Category::Bug, Priority::P2) => "bug_p2",
        (Category::Bug, _) => "bug_p3",
        (Category::Feature, Priority::P2) => "feature_p2",
        (Category::Feature, _) => "feature_p3",
        (Category::Improvement, Priority::P2) => "improvement_p2",
        (Category::Improvement, _) => "improvement_p3",
        (Category::CustomerSupport, Priority::P1) => "customer_support_p1",
        (Category::CustomerSupport, Priority::P2) => "customer_support_p2",
        (Category::CustomerSupport, _) => "customer_support_p3",
    }
}

/// Subject and body for one ticket with the given labels.
fn render(rng: &mut Rng, ctx: &Ctx<'_>, c: Category, p: Priority) -> (String, String) {
    let area = *rng.pick(AREAS);
    let team = *rng.pick(TEAMS);
    let region = *rng.pick(REGIONS);
    let date = us(shift(ctx.day, -rng.range(1, 9)));
    let due = us(shift(ctx.day, rng.range(7, 45)));
    let product = ctx.product;
    let no_workaround = *rng.pick(&["There is no workaround.", "We have found no workaround."]);
    let mut s: Vec<String> = Vec::new();
    let subject;
    match c {
        Category::Bug => {
            let symptom = *rng.pick(SYMPTOMS);
            if p == Priority::P3 {
                subject = format!("Small glitch in the {area} screen");
                s.push(format!(
                    "The {area} screen in {product} shows a cut-off label and a misaligned button."
                ));
                s.push("It is purely cosmetic; everything still works.".into());
            } else {
                subject = if rng.chance(50) {
                    format!("{area} {symptom}")
                } else {
                    format!("Problem with {area}")
                };
                s.push(format!("Since {date}, the {area} in {product} {symptom}."));
                s.push(
                    rng.pick(&[
                        "This worked until last week and is now broken.".to_string(),
                        format!("It started failing after your release on {date}."),
                        "Nothing changed on our side; it simply stopped working.".to_string(),
                    ])
                    .clone(),
                );
            }
            match p {
                Priority::P0 => {
                    s.push(
                        rng.pick(&[
                            format!("Other customers in the {region} region report the same problem on your community forum."),
                            format!("Your status page is green, but every customer we know in {region} is affected."),
                        ])
                        .clone(),
                    );
                    s.push(no_workaround.into());
                }
                Priority::P1 => {
                    s.push(format!(
                        "Our whole {team} team is completely blocked; nobody can finish the day's work."
                    ));
                    s.push(no_workaround.into());
                }
                Priority::P2 => s.push(format!(
                    "As a workaround, we re-run the {area} by hand, but it costs us an hour a day."
                )),
                Priority::P3 => {}
            }
        }
        Category::Feature => {
            let cap = *rng.pick(CAPABILITIES);
            subject = format!("Request: {cap}");
            s.push(format!("We would like {product} to let us {cap}."));
            s.push(
                rng.pick(&[
                    format!("{product} does not offer this today."),
                    "As far as we can tell this capability does not exist yet.".into(),
                ])
                .clone(),
            );
            dated_or_not(rng, &mut s, p, &due, team);
        }
        Category::Improvement => {
            let slow = *rng.pick(SLOWNESS);
            subject = format!("{area} could be smoother");
            s.push(
                rng.pick(&[
                    format!("The {area} works as designed, but it {slow}."),
                    format!("Nothing is broken; the {area} just {slow}."),
                ])
                .clone(),
            );
            dated_or_not(rng, &mut s, p, &due, team);
        }
        Category::CustomerSupport => {
            let account_note = rng
                .pick(&[
                    "This is about our account, not a product problem.",
                    "No product change is needed; we just need help from your team.",
                ])
                .to_string();
            match p {
                Priority::P1 => {
                    subject = "Account suspended by mistake".into();
                    s.push(format!(
                        "Our {product} account was suspended this morning, although invoice INV-{} was paid on {date}.",
                        rng.range(1000, 9999)
                    ));
                    s.push(format!(
                        "All {} users are locked out, so we are completely blocked.",
                        rng.range(12, 300)
                    ));
                    s.push(account_note);
                    s.push(no_workaround.into());
                }
                Priority::P2 => {
                    let ask = *rng.pick(SUPPORT_ASKS);
                    subject = "Billing request".into();
                    s.push(format!("Could you send us {ask}?"));
                    s.push(account_note);
                    s.push(format!("We need this by {due} for our {team} records."));
                }
                _ => {
                    subject = "Quick question".into();
                    s.push(rng.pick(HOW_TO).to_string());
                    s.push(account_note);
                }
            }
        }
    }
    (subject, s.join(" "))
}

fn dated_or_not(rng: &mut Rng, s: &mut Vec<String>, p: Priority, due: &str, team: &str) {
    if p == Priority::P2 {
        s.push(
            rng.pick(&[
                format!("We need this by {due}, when our {team} team starts its new process."),
                format!("This is needed by {due} for our {team} audit."),
            ])
            .clone(),
        );
    } else if rng.chance(50) {
        s.push("No rush on this; it would simply make life easier.".into());
    }
}
