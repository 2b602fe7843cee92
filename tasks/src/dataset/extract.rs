//! An independent rule-based checker: it reads only a row's rendered user prompt and derives the
//! gold by its own rules (anchor phrases, its own date and number parsing), sharing no code with
//! the generator's structured seed. The generator keeps a row only when both agree, so a template
//! bug that renders a different fact than the seed holds cannot reach the corpus.

use super::{AgreementType, Category, ContractGold, Gold, Priority, TicketGold};

/// Checks `gold` (and `aliases`) against what the extractor reads in `user`; `Err` says why not.
pub fn recheck(gold: &Gold, aliases: &[String], user: &str) -> Result<(), String> {
    match gold {
        Gold::MeetingNotes { answer } => {
            let found = meeting_answer(user)?;
            if normalize(&found) != normalize(answer) {
                return Err(format!("notes say {found:?}, gold is {answer:?}"));
            }
            for alias in aliases {
                check_alias(user, answer, alias)?;
            }
            Ok(())
        }
        Gold::TicketTriage(expected) => {
            let found = ticket_labels(user)?;
            if &found != expected {
                return Err(format!(
                    "ticket reads as {}/{}, gold is {}/{}",
                    found.category.as_str(),
                    found.priority.as_str(),
                    expected.category.as_str(),
                    expected.priority.as_str()
                ));
            }
            Ok(())
        }
        Gold::Contract(expected) => {
            let found = contract_terms(user)?;
            if &found != expected {
                return Err(format!(
                    "contract reads as {}, gold is {}",
                    found.to_json(),
                    expected.to_json()
                ));
            }
            Ok(())
        }
    }
}

/// Trim, collapse whitespace, lower-case (the scorer's normalisation, ASCII-equivalent here).
fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let rest = &text[from..];
    let to = rest.find(end)?;
    Some(&rest[..to])
}

// ---------------------------------------------------------------- meeting notes

/// The answer to the notes' question, read from the notes.
pub fn meeting_answer(user: &str) -> Result<String, String> {
    let question = user
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Question: "))
        .ok_or("no question line")?;
    let notes: Vec<&str> = user
        .lines()
        .filter(|l| !l.starts_with("Question: "))
        .collect();
    let line_with = |needle: &str| -> Result<&str, String> {
        let hits: Vec<&&str> = notes
            .iter()
            .filter(|l| l.to_lowercase().contains(&needle.to_lowercase()))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(format!("no line mentions {needle:?}")),
            _ => Err(format!("{} lines mention {needle:?}", hits.len())),
        }
    };
    if let Some(task) = between(question, "Who owns the action item to ", "?") {
        let line = line_with(task)?;
        let found = between(line, "- ", &format!(" to {task} by "))
            .or_else(|| between(line, ": ", ", due "))
            .ok_or("action line without an owner")?;
        return Ok(found.to_string());
    }
    if let Some(task) = between(question, "What is the due date of the action item to ", "?") {
        let line = line_with(task)?;
        let after = line
            .split_once(&format!(" to {task} by "))
            .or_else(|| line.split_once(", due "))
            .map(|(_, rest)| rest)
            .ok_or("action line without a due date")?;
        let date = after.split(" (").next().unwrap_or(after);
        return Ok(date.trim_end_matches('.').to_string());
    }
    if let Some(init) = between(question, "What budget was approved for the ", "?") {
        let line = line_with(&format!("the {init}"))?;
        let after = line
            .split_once("approved $")
            .or_else(|| line.split_once("signed off at $"))
            .map(|(_, rest)| rest)
            .ok_or("budget line without an approved amount")?;
        let amount: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect();
        return Ok(format!("${}", amount.trim_end_matches(',')));
    }
    if let Some(purpose) = between(question, "Which vendor was selected for the ", "?") {
        let line = line_with(&format!("the {purpose}"))?;
        if let Some((head, _)) = line.split_once(" was selected") {
            return Ok(head.rsplit(". ").next().unwrap_or(head).to_string());
        }
        if let Some((head, _)) = line.split_once(&format!(" won the {purpose} ")) {
            return Ok(head.to_string());
        }
        return between(line, "chose ", &format!(" for the {purpose}"))
            .map(str::to_string)
            .ok_or_else(|| "vendor line without a choice".to_string());
    }
    if let Some(comp) = between(question, "Which team will own the ", " after the handover?") {
        let line = line_with(&format!("the {comp} "))?;
        if let Some(rest) = line
            .split_once(&format!("the {comp} moves from "))
            .map(|x| x.1)
        {
            return between(rest, " to ", " on ")
                .map(str::to_string)
                .ok_or_else(|| "handover without a receiving team".to_string());
        }
        if let Some((head, _)) = line.split_once(&format!(" takes over the {comp}")) {
            return Ok(head.to_string());
        }
        return between(line, "run by ", " instead of")
            .map(str::to_string)
            .ok_or_else(|| "handover line without a team".to_string());
    }
    Err(format!("unknown question {question:?}"))
}

/// An alias must name the same thing as the gold, unambiguously within the notes.
fn check_alias(user: &str, gold: &str, alias: &str) -> Result<(), String> {
    if normalize(alias) == normalize(gold) {
        return Err(format!("alias {alias:?} repeats the gold"));
    }
    if let Some(gold_date) = parse_date(gold) {
        return match parse_date(alias) {
            Some(d) if d == gold_date => Ok(()),
            _ => Err(format!("date alias {alias:?} is not {gold:?}")),
        };
    }
    if gold.starts_with('$') {
        let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
        let plain = alias.replace(['$', ','], "").replace("USD", "");
        return if digits(alias) == digits(gold) && plain.trim().chars().all(|c| c.is_ascii_digit())
        {
            Ok(())
        } else {
            Err(format!("amount alias {alias:?} is not {gold:?}"))
        };
    }
    if alias == format!("{gold} team") {
        return Ok(());
    }
    // A person: the alias must match exactly one attendee.
    let attendees = user
        .lines()
        .find_map(|l| l.strip_prefix("Attendees: "))
        .ok_or("no attendee line")?;
    let names: Vec<&str> = attendees
        .split("), ")
        .map(|a| a.split(" (").next().unwrap_or(a).trim())
        .collect();
    let matches_alias = |name: &str| -> bool {
        let (first, last) = name.split_once(' ').unwrap_or((name, ""));
        match alias.split_once(". ") {
            Some((initial, rest)) => first.starts_with(initial) && last == rest,
            None => first == alias,
        }
    };
    let hits: Vec<&&str> = names.iter().filter(|n| matches_alias(n)).collect();
    match hits.as_slice() {
        [one] if **one == gold => Ok(()),
        [one] => Err(format!("alias {alias:?} names {one}, not {gold}")),
        _ => Err(format!("alias {alias:?} matches {} attendees", hits.len())),
    }
}

// ---------------------------------------------------------------- dates and numbers

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// `(year, month, day)` of `June 17, 2026`, `17 June 2026` or `2026-06-17`, if a real date.
fn parse_date(text: &str) -> Option<(i32, u8, u8)> {
    let text = text.trim().trim_end_matches('.');
    let words: Vec<&str> = text.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let month_of = |w: &str| {
        MONTHS
            .iter()
            .position(|m| *m == w.to_lowercase())
            .map(|i| i as u8 + 1)
    };
    let (y, m, d) = match words.as_slice() {
        [iso] => {
            let mut parts = iso.split('-');
            (
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
                parts.next()?.parse().ok()?,
            )
        }
        [month, day, year] if month_of(month).is_some() => {
            (year.parse().ok()?, month_of(month)?, day.parse().ok()?)
        }
        [day, month, year] => (year.parse().ok()?, month_of(month)?, day.parse().ok()?),
        _ => return None,
    };
    let month = time::Month::try_from(m).ok()?;
    time::Date::from_calendar_date(y, month, d).ok()?;
    Some((y, m, d))
}

/// A date at the start of `text` (up to the first `.` that ends a sentence or ` (`).
fn leading_date(text: &str) -> Option<(i32, u8, u8)> {
    let end = [". ", " (", " instead", "\n"]
        .iter()
        .filter_map(|stop| text.find(stop))
        .min()
        .unwrap_or(text.len());
    parse_date(&text[..end])
}

fn iso(date: (i32, u8, u8)) -> String {
    format!("{:04}-{:02}-{:02}", date.0, date.1, date.2)
}

/// The last integer in `text` (`thirty (30)` → 30, `net 45` → 45).
fn last_integer(text: &str) -> Option<i64> {
    let mut digits: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            current.push(c);
        } else if !current.is_empty() {
            digits.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        digits.push(current);
    }
    digits.last()?.parse().ok()
}

/// The number between `anchor` and the next `unit` in `text`.
fn number_between(text: &str, anchor: &str, unit: &str) -> Option<i64> {
    last_integer(between(text, anchor, unit)?)
}

// ---------------------------------------------------------------- tickets

const BUG_CUES: &[&str] = &[
    "is now broken",
    "started failing",
    "stopped working",
    "purely cosmetic",
];
const FEATURE_CUES: &[&str] = &["does not offer this today", "does not exist yet"];
const IMPROVEMENT_CUES: &[&str] = &["works as designed", "nothing is broken"];
const SUPPORT_CUES: &[&str] = &["not a product problem", "no product change is needed"];

/// The labels the rubric gives the [TARGET] ticket.
pub fn ticket_labels(user: &str) -> Result<TicketGold, String> {
    let target = user
        .split("\n\n")
        .find(|block| block.starts_with("[TARGET]"))
        .ok_or("no [TARGET] ticket")?
        .to_lowercase();
    let has = |cues: &[&str]| cues.iter().any(|c| target.contains(c));
    let categories: Vec<Category> = [
        (Category::Bug, BUG_CUES),
        (Category::Feature, FEATURE_CUES),
        (Category::Improvement, IMPROVEMENT_CUES),
        (Category::CustomerSupport, SUPPORT_CUES),
    ]
    .into_iter()
    .filter(|(_, cues)| has(cues))
    .map(|(c, _)| c)
    .collect();
    let category = match categories.as_slice() {
        [one] => *one,
        other => return Err(format!("{} category cues in the target", other.len())),
    };
    let no_workaround = has(&["there is no workaround", "found no workaround"]);
    let many = has(&["other customers", "every customer"]);
    let blocked = has(&["completely blocked", "fully blocked"]);
    let workaround = has(&["as a workaround", "work around it"]);
    let dated = has(&["need this by", "needed by"]);
    let priority = if no_workaround && many {
        Priority::P0
    } else if no_workaround && blocked {
        Priority::P1
    } else if no_workaround || many || blocked {
        return Err("impact cues without a matching rule".into());
    } else if workaround || dated {
        Priority::P2
    } else {
        Priority::P3
    };
    Ok(TicketGold { category, priority })
}

// ---------------------------------------------------------------- contracts

/// The ten terms as the contract text states them, amendments applied.
pub fn contract_terms(user: &str) -> Result<ContractGold, String> {
    let lines: Vec<&str> = user.lines().collect();
    let title = lines
        .iter()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .ok_or("no title")?;
    let agreement_type = if title.contains("SUBSCRIPTION") {
        AgreementType::SaasSubscription
    } else if title.contains("LICENSE") {
        AgreementType::SoftwareLicense
    } else if title.contains("MAINTENANCE") {
        AgreementType::SupportMaintenance
    } else if title.contains("SERVICES") {
        AgreementType::TechnologyServices
    } else {
        return Err(format!("unknown title {title:?}"));
    };
    let split = lines
        .iter()
        .position(|l| l.starts_with("AMENDMENT"))
        .unwrap_or(lines.len());
    let (body, amendment) = lines.split_at(split);
    let body = body.join("\n");
    let section = |prefix: &str| -> Result<&str, String> {
        lines[..split]
            .iter()
            .find(|l| l.starts_with(prefix))
            .copied()
            .ok_or_else(|| format!("no section {prefix:?}"))
    };
    let effective = body
        .split_once("effective as of ")
        .and_then(|(_, rest)| leading_date(rest))
        .ok_or("no effective date")?;
    let term = section("2. Term.")?;
    let mut term_end = term
        .split_once("ends on ")
        .and_then(|(_, rest)| leading_date(rest))
        .ok_or("no initial term end date")?;
    let auto_renews = (term.contains("renews automatically")
        || term.contains("automatically renew"))
        && !term.contains("does not renew automatically");
    let (renewal_term_months, mut non_renewal_notice_days) = if auto_renews {
        let months = number_between(term, "successive ", " month")
            .or_else(|| number_between(term, "additional ", " month"))
            .or_else(|| {
                number_between(term, "successive ", " year")
                    .or_else(|| number_between(term, "additional ", " year"))
                    .map(|y| y * 12)
            });
        let notice = number_between(term, "at least ", " days")
            .or_else(|| number_between(term, "no later than ", " days"));
        (months, notice)
    } else {
        (None, None)
    };
    let fees = section("3. Fees")?;
    let mut payment_terms_days = number_between(fees, "invoice within ", " days")
        .or_else(|| number_between(fees, "net ", " days"));
    let termination = section("4. Termination.")?;
    let termination_for_convenience =
        !termination.contains("Neither party may terminate this Agreement for convenience");
    let mut termination_notice_days = if termination_for_convenience {
        number_between(termination, "for convenience on ", " days'")
            .or_else(|| number_between(termination, "without cause by giving at least ", " days'"))
    } else {
        None
    };
    let data = section("5. Data")?;
    let mut security_incident_notice_hours = data
        .split(". ")
        .find(|s| s.contains("Security Incident"))
        .and_then(|s| number_between(s, "within ", " hours"));
    for sentence in amendment.iter().flat_map(|l| l.split(". ")) {
        if sentence.contains("invoices are payable within ") {
            payment_terms_days = number_between(sentence, "payable within ", " days");
        } else if sentence.contains("termination for convenience is changed") {
            termination_notice_days = number_between(sentence, " to ", " days");
        } else if sentence.contains("Security Incident notification period is changed") {
            security_incident_notice_hours = number_between(sentence, " to ", " hours");
        } else if sentence.contains("non-renewal notice period is changed") {
            non_renewal_notice_days = number_between(sentence, " to ", " days");
        } else if let Some((_, rest)) = sentence.split_once("extended to end on ") {
            term_end = leading_date(rest).ok_or("amendment with an unreadable date")?;
        }
    }
    Ok(ContractGold {
        agreement_type,
        effective_date: iso(effective),
        initial_term_end_date: iso(term_end),
        auto_renews,
        renewal_term_months,
        non_renewal_notice_days,
        payment_terms_days,
        termination_for_convenience,
        termination_notice_days,
        security_incident_notice_hours,
    })
}
