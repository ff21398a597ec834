//! Interactive questions (dialoguer) in natscli's wording. Every function refuses to ask
//! when standard input and output are not both terminals, so nothing ever waits on a pipe;
//! callers decide what a missing answer means (natscli's defaults, or an error).

use dialoguer::theme::ColorfulTheme;
use dialoguer::{Confirm, Input, Select};

use crate::error::{CliError, WithContext};
use crate::output::format::parse_bytes;
use crate::output::is_interactive;

fn require_terminal() -> Result<(), CliError> {
    if is_interactive() {
        Ok(())
    } else {
        Err(CliError::Prompt(
            "cannot prompt for user input without a terminal".to_string(),
        ))
    }
}

fn theme() -> ColorfulTheme {
    ColorfulTheme::default()
}

/// Free text; Enter takes `default` (which may be empty).
pub fn input(prompt: &str, default: &str) -> Result<String, CliError> {
    require_terminal()?;
    let theme = theme();
    let mut question = Input::<String>::with_theme(&theme)
        .with_prompt(prompt)
        .allow_empty(true);
    if !default.is_empty() {
        question = question.default(default.to_string());
    }
    Ok(question.interact_text()?.trim().to_string())
}

/// Free text that may not be left empty (asked again until answered).
pub fn input_required(prompt: &str) -> Result<String, CliError> {
    require_terminal()?;
    let theme = theme();
    let answer: String = Input::with_theme(&theme)
        .with_prompt(prompt)
        .validate_with(|text: &String| {
            if text.trim().is_empty() {
                Err("Value is required")
            } else {
                Ok(())
            }
        })
        .interact_text()?;
    Ok(answer.trim().to_string())
}

/// One of several options; Enter takes `default` (or the first option).
pub fn select(prompt: &str, options: &[String], default: Option<&str>) -> Result<String, CliError> {
    require_terminal()?;
    if options.is_empty() {
        return Err(CliError::Prompt("nothing to select from".to_string()));
    }
    let default_index = default
        .and_then(|d| options.iter().position(|o| o == d))
        .unwrap_or(0);
    let theme = theme();
    let index = Select::with_theme(&theme)
        .with_prompt(prompt)
        .items(options)
        .default(default_index)
        .interact()?;
    Ok(options[index].clone())
}

/// Yes or no; Enter takes the default.
pub fn confirm(prompt: &str, default: bool) -> Result<bool, CliError> {
    require_terminal()?;
    let theme = theme();
    Ok(Confirm::with_theme(&theme)
        .with_prompt(prompt)
        .default(default)
        .show_default(true)
        .wait_for_newline(true)
        .interact()?)
}

/// Asks natscli's questions unless it may not (`--defaults`, or no terminal): then each
/// question's default is the answer, so a piped session never waits and never fails for a
/// question that has a default.
pub struct Asker {
    pub accept_defaults: bool,
}

impl Asker {
    pub fn input(&self, prompt_text: &str, default: &str) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        input(prompt_text, default).context("invalid input")
    }

    pub fn integer(&self, prompt_text: &str, default: &str) -> Result<i64, CliError> {
        let answer = self.input(prompt_text, default)?;
        answer
            .trim()
            .parse::<i64>()
            .map_err(|_| CliError::message(format!("invalid input: {answer:?} is not a number")))
    }

    /// A size such as `256MB`; `-1` is unlimited.
    pub fn bytes(&self, prompt_text: &str, default: &str) -> Result<i64, CliError> {
        let answer = self.input(prompt_text, default)?;
        if answer.trim() == "-1" {
            return Ok(-1);
        }
        parse_bytes(&answer).context("invalid input")
    }

    pub fn select(
        &self,
        prompt_text: &str,
        options: &[&str],
        default: &str,
    ) -> Result<String, CliError> {
        if self.accept_defaults {
            return Ok(default.to_string());
        }
        let owned: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        select(prompt_text, &owned, Some(default)).context("invalid input")
    }

    pub fn confirm(&self, prompt_text: &str, default: bool) -> Result<bool, CliError> {
        if self.accept_defaults {
            return Ok(default);
        }
        confirm(prompt_text, default).context("invalid input")
    }
}
