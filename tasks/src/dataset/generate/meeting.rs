//! meeting-notes-lookup: notes with several facts of each kind; the question asks for one.
//!
//! Distractors: other action items and owners, reassigned owners and moved due dates, requested
//! and last-year amounts next to the approved budget, the vendors not chosen, the team handing a
//! component over, plus filler updates full of names, dates and numbers.

use super::rng::Rng;
use super::text::{cap, dollars, iso, random_date, shift, thousands, uk, us, weekday};
use super::words::{
    COMPANIES, COMPONENTS, CUSTOMERS, FIRST_NAMES, INITIATIVES, LAST_NAMES, MEETING_KINDS,
    PRODUCTS, PURPOSES, TASKS, TEAMS,
};
use super::{Draft, Gold};
use serde_json::json;
use time::Date;

const SYSTEM: &str = "You answer one question about a set of meeting notes. Return only a JSON \
object with exactly one key, \"answer\", whose value is a string: {\"answer\": \"<value>\"}. Copy \
the value as it is written in the notes: a person's full name, a date, an amount, a company name \
or a team name. When the notes record a change, answer with the final value. Do not add other \
keys, explanations or code fences.";

struct Person {
    first: &'static str,
    last: &'static str,
    team: &'static str,
}

impl Person {
    fn full(&self) -> String {
        format!("{} {}", self.first, self.last)
    }
}

/// Renders dates in the document's one style.
#[derive(Clone, Copy)]
struct Style {
    uk: bool,
}

impl Style {
    fn date(self, d: Date) -> String {
        if self.uk { uk(d) } else { us(d) }
    }
    fn other(self, d: Date) -> String {
        if self.uk { us(d) } else { uk(d) }
    }
}

/// Draws one meeting-notes row.
pub fn draft(rng: &mut Rng) -> Draft {
    let style = Style { uk: rng.chance(40) };
    let meeting_day = random_date(rng, 2026, 700);
    let people = pick_people(rng);
    let product = *rng.pick(PRODUCTS);
    let n = people.len();
    let person = |rng: &mut Rng| rng.below(n);

    // Structured facts.
    let k = rng.range(3, 5) as usize;
    let tasks = rng.sample(TASKS, k);
    let mut actions = Vec::new();
    for task in &tasks {
        let owner = person(rng);
        let due = shift(meeting_day, rng.range(5, 60));
        let twist = rng.below(4);
        let moved_from = (twist == 1).then(|| shift(due, -rng.range(3, 20)));
        let reassigned = (twist == 2).then(|| (owner + 1 + rng.below(n - 1)) % n);
        actions.push((*task, owner, due, moved_from, reassigned, rng.chance(50)));
    }
    let initiatives = rng.sample(INITIATIVES, 2);
    let budgets: Vec<_> = initiatives
        .iter()
        .map(|init| {
            let approved = rng.range(8, 190) * 500;
            let requested = approved + rng.range(2, 40) * 500;
            let last_year = rng.range(8, 190) * 500;
            (
                *init,
                approved,
                requested,
                last_year,
                person(rng),
                rng.below(3),
            )
        })
        .collect();
    let k = rng.range(1, 2) as usize;
    let purposes = rng.sample(PURPOSES, k);
    let vendors: Vec<_> = purposes
        .iter()
        .map(|p| (*p, rng.sample(COMPANIES, 3), rng.below(3)))
        .collect();
    let k = rng.range(1, 2) as usize;
    let components = rng.sample(COMPONENTS, k);
    let handovers: Vec<_> = components
        .iter()
        .map(|c| {
            let teams = rng.sample(TEAMS, 2);
            (
                *c,
                teams[0],
                teams[1],
                shift(meeting_day, rng.range(7, 45)),
                rng.below(3),
            )
        })
        .collect();

    // Rendering.
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    sections.push((
        "Updates".into(),
        fillers(rng, &people, product, style, meeting_day, 2, 5),
    ));
    let mut middle: Vec<(String, Vec<String>)> = vec![
        (
            "Budget".into(),
            budgets
                .iter()
                .map(|&(init, appr, req, last, who, s)| {
                    let who = people[who].full();
                    match s {
                        0 => format!(
                            "{who} asked for {} for the {init}; the group approved {}. Last year the {init} cost {}.",
                            dollars(req), dollars(appr), dollars(last)
                        ),
                        1 => format!(
                            "Finance approved {} for the {init}, less than the {} that {who} requested.",
                            dollars(appr), dollars(req)
                        ),
                        _ => format!(
                            "The {init} budget was signed off at {} (request: {}; last year: {}).",
                            dollars(appr), dollars(req), dollars(last)
                        ),
                    }
                })
                .collect(),
        ),
        (
            "Vendors".into(),
            vendors
                .iter()
                .map(|(purpose, v, s)| match s {
                    0 => format!(
                        "For the {purpose}, the team compared {}, {} and {}. {} was selected; {} was cheaper but could not start before {}.",
                        v[1], v[0], v[2], v[0], v[2], style.date(shift(meeting_day, 30))
                    ),
                    1 => format!(
                        "{} won the {purpose} contract ahead of {} and {}, mainly on price.",
                        v[0], v[1], v[2]
                    ),
                    _ => format!(
                        "After reference calls, the group chose {} for the {purpose} over {}. {} remains the fallback.",
                        v[0], v[1], v[2]
                    ),
                })
                .collect(),
        ),
        (
            "Ownership changes".into(),
            handovers
                .iter()
                .map(|&(comp, from, to, date, s)| {
                    let d = style.date(date);
                    let stay = format!("{from} stays on call for the {comp} for two more weeks.");
                    match s {
                        0 => format!("Ownership of the {comp} moves from {from} to {to} on {d}. {stay}"),
                        1 => format!("{to} takes over the {comp} from {from} starting {d}. {stay}"),
                        _ => format!("From {d}, the {comp} will be run by {to} instead of {from}. {stay}"),
                    }
                })
                .collect(),
        ),
    ];
    rng.shuffle(&mut middle);
    sections.extend(middle);
    sections.push((
        "Other business".into(),
        fillers(rng, &people, product, style, meeting_day, 1, 3),
    ));
    let mut action_lines = Vec::new();
    for &(task, owner, due, moved, reassigned, dash) in &actions {
        let owner_name = people[owner].full();
        let mut decor = String::new();
        if let Some(old) = moved {
            decor = format!(" (moved from {})", style.date(old));
        }
        if let Some(prev) = reassigned {
            decor = format!(" (reassigned from {})", people[prev].full());
        }
        action_lines.push(if dash {
            format!("- {owner_name} to {task} by {}{decor}.", style.date(due))
        } else {
            format!(
                "- {}: {owner_name}, due {}{decor}.",
                cap(task),
                style.date(due)
            )
        });
    }

    let mut notes = format!(
        "Meeting notes: {product} {}\nDate: {}, {}\nFacilitator: {}\nAttendees: {}\nNotes taken by: {}\n",
        rng.pick(MEETING_KINDS),
        weekday(meeting_day),
        style.date(meeting_day),
        people[0].full(),
        people
            .iter()
            .map(|p| format!("{} ({})", p.full(), p.team))
            .collect::<Vec<_>>()
            .join(", "),
        people[n - 1].full(),
    );
    for (i, (title, lines)) in sections.iter().enumerate() {
        notes.push_str(&format!("\n{}. {title}\n", i + 1));
        for line in lines {
            notes.push_str(line);
            notes.push('\n');
        }
    }
    notes.push_str("\nAction items\n");
    for line in &action_lines {
        notes.push_str(line);
        notes.push('\n');
    }

    // The question.
    let (kind, question, answer, aliases) = match rng.below(5) {
        0 | 1 => {
            let &(task, owner, due, _, _, _) = rng.pick(&actions);
            if rng.chance(50) {
                let p = &people[owner];
                let mut aliases = vec![format!("{}. {}", &p.first[..1], p.last)];
                if people.iter().filter(|q| q.first == p.first).count() == 1 {
                    aliases.insert(0, p.first.to_string());
                }
                (
                    "action_owner",
                    format!("Who owns the action item to {task}?"),
                    p.full(),
                    aliases,
                )
            } else {
                (
                    "action_due",
                    format!("What is the due date of the action item to {task}?"),
                    style.date(due),
                    vec![style.other(due), iso(due)],
                )
            }
        }
        2 => {
            let &(init, appr, ..) = rng.pick(&budgets);
            (
                "approved_budget",
                format!("What budget was approved for the {init}?"),
                dollars(appr),
                vec![
                    thousands(appr),
                    appr.to_string(),
                    format!("${appr}"),
                    format!("USD {}", thousands(appr)),
                ],
            )
        }
        3 => {
            let (purpose, v, _) = rng.pick(&vendors);
            (
                "selected_vendor",
                format!("Which vendor was selected for the {purpose}?"),
                v[0].to_string(),
                Vec::new(),
            )
        }
        _ => {
            let &(comp, _, to, _, _) = rng.pick(&handovers);
            (
                "team_handover",
                format!("Which team will own the {comp} after the handover?"),
                to.to_string(),
                vec![format!("{to} team")],
            )
        }
    };
    let user = format!(
        "Read the meeting notes below and answer the question.\n\n{notes}\nQuestion: {question}\n"
    );
    Draft {
        system: SYSTEM.to_string(),
        user,
        output_schema: json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": false,
        }),
        gold: Gold::MeetingNotes { answer },
        aliases,
        kind,
    }
}

fn pick_people(rng: &mut Rng) -> Vec<Person> {
    let n = rng.range(5, 8) as usize;
    let mut firsts = rng.sample(FIRST_NAMES, n);
    if rng.chance(25) {
        // Two people share a first name: their first-name alias becomes ambiguous.
        firsts[n - 1] = firsts[0];
    }
    let lasts = rng.sample(LAST_NAMES, n);
    firsts
        .into_iter()
        .zip(lasts)
        .map(|(first, last)| Person {
            first,
            last,
            team: TEAMS[rng.below(TEAMS.len())],
        })
        .collect()
}

fn fillers(
    rng: &mut Rng,
    people: &[Person],
    product: &str,
    style: Style,
    day: Date,
    min: i64,
    max: i64,
) -> Vec<String> {
    let count = rng.range(min, max) as usize;
    let mut out = Vec::new();
    for _ in 0..count {
        let i = rng.below(people.len());
        let j = (i + 1 + rng.below(people.len() - 1)) % people.len();
        let p = people[i].full();
        let q = people[j].first;
        let a = rng.range(3, 400);
        let b = rng.range(3, 400);
        let d1 = style.date(shift(day, rng.range(-20, 60)));
        let d2 = style.date(shift(day, rng.range(61, 90)));
        let customer = rng.pick(CUSTOMERS);
        let team = rng.pick(TEAMS);
        out.push(match rng.below(10) {
            0 => format!("{p} reported that {product} now has {a} pilot accounts, up from {b} last month."),
            1 => format!("{p} reminded everyone that the quarterly business review is on {d1}."),
            2 => format!("Support volume for {product} was {a} tickets last week; {q} expects it to settle below {b}."),
            3 => format!("{p} said the {team} group is hiring {} more people before {d2}.", a % 7 + 2),
            4 => format!("{p} noted that the {product} incident on {d1} lasted {} minutes and affected {b} customers.", a % 90 + 5),
            5 => format!("Travel costs for the last offsite came to {} against a plan of {}.", dollars(a * 100), dollars(b * 100)),
            6 => format!("{p} and {q} will pair on the {product} demo for {customer} on {d1}."),
            7 => format!("The {customer} renewal closed at {} for {} years, according to {p}.", dollars(a * 250), a % 3 + 1),
            8 => format!("{p} is out of office from {d1} to {d2}; {q} covers urgent questions."),
            _ => format!("{p} proposed moving the {product} sync to Thursdays; no decision yet."),
        });
    }
    out
}
