//! Families and their typed gold answers (METHODOLOGY §5 shapes).

use serde_json::{Value, json};

/// A task family, in contract order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Find one fact in meeting notes: `{"answer": string}`.
    MeetingNotesLookup,
    /// Classify one support ticket: `{"category", "priority"}`.
    TicketTriage,
    /// Extract ten typed fields from a contract.
    ContractTermsExtraction,
}

impl Family {
    /// The three families in contract order.
    pub const ALL: [Family; 3] = [
        Family::MeetingNotesLookup,
        Family::TicketTriage,
        Family::ContractTermsExtraction,
    ];

    /// The family's name (`use_case` value and manifest key).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::MeetingNotesLookup => "meeting-notes-lookup",
            Family::TicketTriage => "ticket-triage",
            Family::ContractTermsExtraction => "contract-terms-extraction",
        }
    }

    /// Parses a family name; `None` for an unknown family.
    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The family's JSONL file name in a release (`<family>.jsonl`).
    pub fn file_name(self) -> String {
        format!("{}.jsonl", self.as_str())
    }
}

/// Ticket category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// Existing functionality broken.
    Bug,
    /// A capability that does not exist yet.
    Feature,
    /// A change to something that works.
    Improvement,
    /// Account, billing or how-to; no product change.
    CustomerSupport,
}

impl Category {
    /// All categories.
    pub const ALL: [Category; 4] = [
        Category::Bug,
        Category::Feature,
        Category::Improvement,
        Category::CustomerSupport,
    ];

    /// The exact lowercase label.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Bug => "bug",
            Category::Feature => "feature",
            Category::Improvement => "improvement",
            Category::CustomerSupport => "customer_support",
        }
    }

    /// Parses an exact label (case-sensitive, as scoring requires).
    pub fn parse(label: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == label)
    }
}

/// Ticket priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Outage for many, no workaround.
    P0,
    /// One customer fully blocked, no workaround.
    P1,
    /// Workaround exists, partial impact, or a dated request.
    P2,
    /// Everything else.
    P3,
}

impl Priority {
    /// All priorities.
    pub const ALL: [Priority; 4] = [Priority::P0, Priority::P1, Priority::P2, Priority::P3];

    /// The exact lowercase label.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::P0 => "p0",
            Priority::P1 => "p1",
            Priority::P2 => "p2",
            Priority::P3 => "p3",
        }
    }

    /// Parses an exact label.
    pub fn parse(label: &str) -> Option<Priority> {
        Priority::ALL.into_iter().find(|p| p.as_str() == label)
    }
}

/// Contract agreement type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgreementType {
    /// Hosted software sold by subscription.
    SaasSubscription,
    /// A licence to install and use software.
    SoftwareLicense,
    /// Support and maintenance of software.
    SupportMaintenance,
    /// Professional technology services.
    TechnologyServices,
}

impl AgreementType {
    /// All agreement types.
    pub const ALL: [AgreementType; 4] = [
        AgreementType::SaasSubscription,
        AgreementType::SoftwareLicense,
        AgreementType::SupportMaintenance,
        AgreementType::TechnologyServices,
    ];

    /// The exact label.
    pub fn as_str(self) -> &'static str {
        match self {
            AgreementType::SaasSubscription => "saas_subscription",
            AgreementType::SoftwareLicense => "software_license",
            AgreementType::SupportMaintenance => "support_maintenance",
            AgreementType::TechnologyServices => "technology_services",
        }
    }

    /// Parses an exact label.
    pub fn parse(label: &str) -> Option<AgreementType> {
        AgreementType::ALL.into_iter().find(|a| a.as_str() == label)
    }
}

/// Ticket-triage gold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TicketGold {
    /// Expected category.
    pub category: Category,
    /// Expected priority.
    pub priority: Priority,
}

/// Contract-extraction gold: the ten fields with their types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractGold {
    /// Agreement type.
    pub agreement_type: AgreementType,
    /// `YYYY-MM-DD`, a real date.
    pub effective_date: String,
    /// `YYYY-MM-DD`, a real date.
    pub initial_term_end_date: String,
    /// Whether the agreement renews automatically.
    pub auto_renews: bool,
    /// Renewal term in months, or null.
    pub renewal_term_months: Option<i64>,
    /// Non-renewal notice in days, or null.
    pub non_renewal_notice_days: Option<i64>,
    /// Days to pay an invoice, or null.
    pub payment_terms_days: Option<i64>,
    /// Whether a party may terminate for convenience.
    pub termination_for_convenience: bool,
    /// Notice for termination for convenience in days, or null.
    pub termination_notice_days: Option<i64>,
    /// Hours to notify a security incident, or null.
    pub security_incident_notice_hours: Option<i64>,
}

impl ContractGold {
    /// The gold as a JSON object with the ten keys in [`super::CONTRACT_FIELDS`] order.
    pub fn to_json(&self) -> Value {
        json!({
            "agreement_type": self.agreement_type.as_str(),
            "effective_date": self.effective_date,
            "initial_term_end_date": self.initial_term_end_date,
            "auto_renews": self.auto_renews,
            "renewal_term_months": self.renewal_term_months,
            "non_renewal_notice_days": self.non_renewal_notice_days,
            "payment_terms_days": self.payment_terms_days,
            "termination_for_convenience": self.termination_for_convenience,
            "termination_notice_days": self.termination_notice_days,
            "security_incident_notice_hours": self.security_incident_notice_hours,
        })
    }
}

/// A row's typed gold, one variant per family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gold {
    /// meeting-notes-lookup: the canonical answer (aliases live on the row).
    MeetingNotes {
        /// Canonical answer text.
        answer: String,
    },
    /// ticket-triage.
    TicketTriage(TicketGold),
    /// contract-terms-extraction.
    Contract(ContractGold),
}

impl Gold {
    /// The family this gold belongs to.
    pub fn family(&self) -> Family {
        match self {
            Gold::MeetingNotes { .. } => Family::MeetingNotesLookup,
            Gold::TicketTriage(_) => Family::TicketTriage,
            Gold::Contract(_) => Family::ContractTermsExtraction,
        }
    }

    /// The gold exactly as stored in a row's `gold` field; also the correct answer object.
    pub fn to_json(&self) -> Value {
        match self {
            Gold::MeetingNotes { answer } => json!({ "answer": answer }),
            Gold::TicketTriage(t) => json!({
                "category": t.category.as_str(),
                "priority": t.priority.as_str(),
            }),
            Gold::Contract(c) => c.to_json(),
        }
    }
}

/// True for `YYYY-MM-DD` naming a real calendar date (2027-02-30 is not).
pub fn is_iso_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let Ok(month) = time::Month::try_from(m as u8) else {
        return false;
    };
    // Year 0000 is no year of the Gregorian calendar as written in dates.
    y >= 1 && m <= 12 && d <= 31 && time::Date::from_calendar_date(y as i32, month, d as u8).is_ok()
}
