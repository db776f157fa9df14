//! `--apply`'s plan and journal, pure: the steps of a previewed plan (one per slot), the
//! fingerprint of the slot map it was made from, the journal's lines, and whether a cluster is
//! where a stopped run left it. The live client carries the steps out.
//!
//! Every step is written to the journal before and after it runs, so that a run stopped
//! half-way (killed, a lost connection) is continued with `--resume`: the steps come from the
//! journal, not from a new plan, and a slot left half-moved is finished the way the plan
//! intended.

use super::{ClusterView, Move};
use crate::slot::SLOT_COUNT;

/// The journal's first line: what is applied, and to which cluster state.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JournalHead {
    /// The journal's format.
    pub keyplan_apply: u32,
    /// `rebalance` or `reshard`.
    pub command: String,
    /// A digest of the slot map the plan was made from (each slot's owner id).
    pub fingerprint: String,
    /// That slot map: (first slot, last slot, owner id) ranges.
    pub start: Vec<(u16, u16, String)>,
    /// Node id → `host:port` of every master taking part.
    pub nodes: Vec<(String, String)>,
    /// The steps: (slot, from id, to id), in order.
    pub steps: Vec<(u16, String, String)>,
}

/// One line after the head: a step begun or done.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct JournalLine {
    step: usize,
    slot: u16,
    state: String,
}

/// The journal's line for step `step` of `head` begun (`done` false) or done, with its newline.
pub fn journal_line(head: &JournalHead, step: usize, done: bool) -> String {
    let line = JournalLine {
        step,
        slot: head.steps[step].0,
        state: if done { "done" } else { "begin" }.to_string(),
    };
    let mut text = serde_json::to_string(&line).expect("invariant: a line serializes");
    text.push('\n');
    text
}

/// The journal's first line, with its newline.
pub fn head_line(head: &JournalHead) -> String {
    let mut text = serde_json::to_string(head).expect("invariant: the head serializes");
    text.push('\n');
    text
}

/// Reads a journal's text: its head and the steps done. A last line cut short (a kill while
/// it was written) is passed over.
pub fn parse_journal(text: &str) -> Result<(JournalHead, Vec<bool>), String> {
    let mut lines = text.lines();
    let head: JournalHead = match lines.next() {
        Some(l) => serde_json::from_str(l)
            .map_err(|e| format!("line 1 is not a keyplan apply journal's head: {e}"))?,
        None => return Err("empty: not a keyplan apply journal".into()),
    };
    let mut done = vec![false; head.steps.len()];
    for (no, line) in lines.enumerate() {
        let Ok(l) = serde_json::from_str::<JournalLine>(line) else {
            break;
        };
        if l.step >= done.len() || head.steps[l.step].0 != l.slot {
            return Err(format!(
                "line {}: step {} of slot {} is not in the plan",
                no + 2,
                l.step,
                l.slot
            ));
        }
        if l.state == "done" {
            done[l.step] = true;
        }
    }
    Ok((head, done))
}

/// A digest of a slot map: each slot's owner id, in slot order.
pub fn fingerprint(owner_ids: &[Option<&str>]) -> String {
    use md5::Digest as _;
    let mut h = md5::Md5::new();
    for o in owner_ids {
        h.update(o.unwrap_or("-").as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Each slot's owner id in `view`.
pub fn owner_ids(view: &ClusterView) -> Vec<Option<&str>> {
    view.owner
        .iter()
        .map(|o| o.and_then(|i| view.nodes[i].id.as_deref()))
        .collect()
}

/// The journal's head for `moves` planned on `view` (the plan's nodes must all be in the
/// cluster already, with ids and addresses).
pub fn plan_head(command: &str, view: &ClusterView, moves: &[Move]) -> Result<JournalHead, String> {
    let mut nodes: Vec<(String, String)> = Vec::new();
    let mut steps = Vec::new();
    let node = |i: usize| -> Result<(String, String), String> {
        let n = &view.nodes[i];
        if n.added {
            return Err(format!(
                "{} is not in the cluster yet: --apply moves slots between masters already in it (add it with redis-cli --cluster add-node first)",
                n.name
            ));
        }
        match (&n.id, &n.address) {
            (Some(id), Some(a)) => Ok((id.clone(), a.clone())),
            _ => Err(format!("{} has no id or address in the slot map", n.name)),
        }
    };
    for m in moves {
        let from = node(m.from)?;
        let to = node(m.to)?;
        for s in &m.slots {
            steps.push((*s, from.0.clone(), to.0.clone()));
        }
        for n in [from, to] {
            if !nodes.contains(&n) {
                nodes.push(n);
            }
        }
    }
    for (i, n) in view.nodes.iter().enumerate() {
        if n.master && !n.added && view.owner.contains(&Some(i)) {
            let n = node(i)?;
            if !nodes.contains(&n) {
                nodes.push(n);
            }
        }
    }
    let ids = owner_ids(view);
    let mut start: Vec<(u16, u16, String)> = Vec::new();
    for (s, o) in ids.iter().enumerate() {
        let Some(o) = o else { continue };
        match start.last_mut() {
            Some(last) if usize::from(last.1) + 1 == s && last.2 == *o => last.1 = s as u16,
            _ => start.push((s as u16, s as u16, o.to_string())),
        }
    }
    Ok(JournalHead {
        keyplan_apply: 1,
        command: command.to_string(),
        fingerprint: fingerprint(&ids),
        start,
        nodes,
        steps,
    })
}

/// The owner id of each slot once the steps marked in `done` are done.
fn expected_owners(head: &JournalHead, done: &[bool]) -> Vec<Option<String>> {
    let mut owners: Vec<Option<String>> = vec![None; SLOT_COUNT];
    for (a, b, id) in &head.start {
        for s in *a..=*b {
            owners[usize::from(s)] = Some(id.clone());
        }
    }
    for ((slot, _, to), d) in head.steps.iter().zip(done) {
        if *d {
            owners[usize::from(*slot)] = Some(to.clone());
        }
    }
    owners
}

/// Whether the cluster (each slot's owner id now) is where the journal's run left it: every
/// slot of a step not done on its source or its destination (the step under way may have
/// closed it on one node or both), every other slot where the plan's start and the steps done
/// put it. Otherwise the slots that are not, first of all.
pub fn check_resume(
    head: &JournalHead,
    done: &[bool],
    now: &[Option<&str>],
) -> Result<(), Vec<u16>> {
    let expected = expected_owners(head, done);
    let mut pending: Vec<Option<(&str, &str)>> = vec![None; SLOT_COUNT];
    for ((slot, from, to), d) in head.steps.iter().zip(done) {
        if !d {
            pending[usize::from(*slot)] = Some((from.as_str(), to.as_str()));
        }
    }
    let differ: Vec<u16> = (0..SLOT_COUNT)
        .filter(|&s| {
            let owner = now.get(s).copied().flatten();
            !match pending[s] {
                Some((from, to)) => owner == Some(from) || owner == Some(to),
                None => owner == expected[s].as_deref(),
            }
        })
        .map(|s| s as u16)
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(differ)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_cut_short_keeps_the_steps_it_recorded_done() {
        let head = JournalHead {
            keyplan_apply: 1,
            command: "reshard".into(),
            fingerprint: "x".into(),
            start: vec![(0, 16383, "a".into())],
            nodes: vec![("a".into(), "h:1".into()), ("b".into(), "h:2".into())],
            steps: vec![(1, "a".into(), "b".into()), (2, "a".into(), "b".into())],
        };
        let text = format!(
            "{}\n{{\"step\":0,\"slot\":1,\"state\":\"begin\"}}\n{{\"step\":0,\"slot\":1,\"state\":\"done\"}}\n{{\"step\":1,\"slot\":2,\"sta",
            serde_json::to_string(&head).unwrap()
        );
        let (h, done) = parse_journal(&text).unwrap();
        assert_eq!(h, head);
        assert_eq!(done, [true, false]);
        let owners = expected_owners(&h, &done);
        assert_eq!(owners[1].as_deref(), Some("b"));
        assert_eq!(owners[2].as_deref(), Some("a"));
        let e = parse_journal("not json\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        assert!(parse_journal("").unwrap_err().contains("empty"));
        let bad = format!(
            "{}\n{{\"step\":5,\"slot\":1,\"state\":\"done\"}}\n",
            serde_json::to_string(&head).unwrap()
        );
        let e = parse_journal(&bad).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        // Resuming: slot 2's step is not done, so it may be on a or b; slot 1 must be on b.
        let mut now = vec![Some("a"); SLOT_COUNT];
        assert_eq!(check_resume(&h, &done, &now), Err(vec![1]));
        now[1] = Some("b");
        assert_eq!(check_resume(&h, &done, &now), Ok(()));
        now[2] = Some("b");
        assert_eq!(check_resume(&h, &done, &now), Ok(()));
        now[3] = Some("b");
        assert_eq!(check_resume(&h, &done, &now), Err(vec![3]));
    }

    #[test]
    fn the_fingerprint_is_each_slot_s_owner() {
        let a = fingerprint(&[Some("a"), None, Some("b")]);
        assert_eq!(a, fingerprint(&[Some("a"), None, Some("b")]));
        assert_ne!(a, fingerprint(&[Some("a"), Some("b"), Some("b")]));
        assert_eq!(a.len(), 32);
    }
}
