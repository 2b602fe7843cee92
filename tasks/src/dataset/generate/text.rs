//! Small rendering helpers: dates, amounts, number words.

use super::rng::Rng;
use time::{Date, Duration, Month};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A day drawn uniformly from `days` days starting at `year`-01-01.
pub fn random_date(rng: &mut Rng, year: i32, days: i64) -> Date {
    let start = Date::from_calendar_date(year, Month::January, 1).unwrap_or(Date::MIN);
    start.saturating_add(Duration::days(rng.range(0, days - 1)))
}

/// `date` moved by `days` (saturating).
pub fn shift(date: Date, days: i64) -> Date {
    date.saturating_add(Duration::days(days))
}

/// `June 17, 2026`.
pub fn us(date: Date) -> String {
    format!("{} {}, {}", month_name(date), date.day(), date.year())
}

/// `17 June 2026`.
pub fn uk(date: Date) -> String {
    format!("{} {} {}", date.day(), month_name(date), date.year())
}

/// `2026-06-17`.
pub fn iso(date: Date) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// `Wednesday`.
pub fn weekday(date: Date) -> String {
    date.weekday().to_string()
}

fn month_name(date: Date) -> &'static str {
    MONTHS
        .get(usize::from(u8::from(date.month())).saturating_sub(1))
        .copied()
        .unwrap_or("January")
}

/// `48,500`.
pub fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$48,500`.
pub fn dollars(n: i64) -> String {
    format!("${}", thousands(n))
}

/// English words for the numbers contracts spell out (`thirty`), `None` for others.
pub fn number_word(n: i64) -> Option<&'static str> {
    Some(match n {
        1 => "one",
        2 => "two",
        3 => "three",
        4 => "four",
        5 => "five",
        6 => "six",
        7 => "seven",
        8 => "eight",
        10 => "ten",
        12 => "twelve",
        14 => "fourteen",
        15 => "fifteen",
        18 => "eighteen",
        20 => "twenty",
        24 => "twenty-four",
        30 => "thirty",
        36 => "thirty-six",
        45 => "forty-five",
        48 => "forty-eight",
        60 => "sixty",
        72 => "seventy-two",
        90 => "ninety",
        120 => "one hundred twenty",
        180 => "one hundred eighty",
        _ => return None,
    })
}

/// `thirty (30)` when a word exists and `spell` is set, else `30`.
pub fn spelled(n: i64, spell: bool) -> String {
    match number_word(n) {
        Some(word) if spell => format!("{word} ({n})"),
        _ => n.to_string(),
    }
}

/// First letter upper-cased.
pub fn cap(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}
