//! Tables that stay tables on 80- and 100-column terminals (issue 61): comparisons keep their
//! columns side by side (short headers, secondary columns dropped, prose under the table)
//! before a table gives way to records, and prose wraps at the width.

use super::support::{RedisServer, require_binary};
use super::terminal::{have_script, in_pty, screen_lines};

pub const TESTS: &[super::support::Test] = &[
    (
        "pattern_by_node_stays_a_table_at_80_and_100",
        pattern_by_node_stays_a_table_at_80_and_100,
    ),
    (
        "live_pattern_by_node_stays_a_table_at_80_and_100",
        live_pattern_by_node_stays_a_table_at_80_and_100,
    ),
    (
        "biggest_keys_stay_a_table_at_80",
        biggest_keys_stay_a_table_at_80,
    ),
    (
        "slot_explain_wraps_at_the_terminal",
        slot_explain_wraps_at_the_terminal,
    ),
    (
        "plan_candidates_stay_a_table_at_80_and_100",
        plan_candidates_stay_a_table_at_80_and_100,
    ),
    (
        "the_servers_data_figure_is_the_last_column_to_go",
        the_servers_data_figure_is_the_last_column_to_go,
    ),
];

/// A live cluster where one node holds most of the data (`used_memory_dataset`): the
/// verdict names it, and its Nodes column stays at 80 and 60 columns, where `bytes` (the
/// sample's own figure) goes first; at 60 it was dropped while `bytes` stayed.
fn the_servers_data_figure_is_the_last_column_to_go() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    let Some(cluster) = crate::cluster::Cluster::create() else {
        return;
    };
    cluster.load(&crate::analyze::generated_keys(3000));
    let value = vec![b'v'; 1 << 20];
    for i in 0..8 {
        let key = format!("{{blob}}:{i}");
        let r = crate::rdb::call_routed(&cluster, &[b"SET", key.as_bytes(), &value]);
        assert!(matches!(r, crate::support::Reply::Status(_)), "{r:?}");
    }
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    for cols in [80u16, 60] {
        let lines = shown(
            &format!("analyze --cluster {url} --sample all --bytes"),
            cols,
        );
        assert_fits(&lines, cols.into());
        let text = lines.join("\n");
        assert!(
            text.contains("Verdict: data is badly skewed by the servers' own count"),
            "{text}"
        );
        let header = lines
            .iter()
            .skip_while(|l| !l.starts_with("Nodes"))
            .nth(2)
            .map_or("", String::as_str);
        assert!(
            header.contains("data (INFO)"),
            "{cols} columns: the servers' data figure is gone:\n{text}"
        );
    }
}

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("keyplan")
        .display()
        .to_string()
}

/// The screen's lines of `args` run on a `cols`-column terminal (stderr dropped).
fn shown(args: &str, cols: u16) -> Vec<String> {
    let (code, typescript) = in_pty(&format!("'{}' {args} 2>/dev/null", bin()), cols);
    assert!(code == 0 || code == 1, "{args}: exit {code}\n{typescript}");
    screen_lines(&typescript)
}

/// The line after the one starting with `title`: a table's top border, or a record.
fn after_title<'a>(lines: &'a [String], title: &str) -> &'a str {
    let i = lines
        .iter()
        .position(|l| l.starts_with(title))
        .unwrap_or_else(|| panic!("no {title:?} in\n{}", lines.join("\n")));
    lines.get(i + 1).map_or("", String::as_str)
}

fn assert_fits(lines: &[String], cols: usize) {
    for l in lines {
        assert!(
            l.chars().count() <= cols,
            "{} > {cols}: {l}",
            l.chars().count()
        );
    }
}

fn pattern_by_node_stays_a_table_at_80_and_100() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    for (cols, masters) in [(80, "4"), (100, "4"), (80, "3"), (100, "6")] {
        let lines = shown(
            &format!("analyze examples/app.keys --masters {masters}"),
            cols,
        );
        assert_fits(&lines, cols.into());
        let top = after_title(&lines, "Pattern × node");
        // The title wraps: the table follows the title's last line.
        let i = lines
            .iter()
            .position(|l| l.starts_with("Pattern × node"))
            .unwrap();
        let table = lines[i..]
            .iter()
            .find(|l| l.starts_with('┌') || l.starts_with('▸'));
        assert!(
            table.is_some_and(|l| l.starts_with('┌')),
            "{cols} columns, {masters} masters: Pattern × node is no table:\n{top}\n{}",
            lines[i..].join("\n")
        );
    }
}

fn biggest_keys_stay_a_table_at_80() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    let Some(server) = require_binary("redis-server") else {
        return;
    };
    let mut r = RedisServer::start(&server, false);
    let mut c = r.connect();
    for i in 0..300 {
        let key = format!("user:{i}:profile");
        c.call(&[b"HSET", key.as_bytes(), b"name", &vec![b'n'; i % 97]])
            .unwrap();
        let key = format!("feed:{{group_{}}}:user:{i}", i % 7);
        c.call(&[b"SET", key.as_bytes(), &vec![b'v'; 10 * i]])
            .unwrap();
    }
    c.call(&[b"SAVE"]).unwrap();
    let dir = match c.call(&[b"CONFIG", b"GET", b"dir"]).unwrap() {
        crate::support::Reply::Array(v) => match &v[1] {
            crate::support::Reply::Bulk(Some(d)) => String::from_utf8(d.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let copy = tempfile::tempdir().unwrap();
    let rdb = copy.path().join("dump.rdb");
    std::fs::copy(std::path::Path::new(&dir).join("dump.rdb"), &rdb).unwrap();
    r.kill();
    let lines = shown(&format!("analyze '{}'", rdb.display()), 80);
    assert_fits(&lines, 80);
    let top = after_title(&lines, "Biggest keys by memory");
    assert!(
        top.starts_with('┌'),
        "not a table at 80 columns:\n{}",
        lines.join("\n")
    );
}

fn slot_explain_wraps_at_the_terminal() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    for cols in [80u16, 100] {
        let lines = shown(
            "slot user:1000 '{user:1000}:cart' 'a{}b{c}' --explain --masters 3",
            cols,
        );
        assert_fits(&lines, cols.into());
        assert!(
            lines.iter().any(|l| l.starts_with('┌')),
            "{}",
            lines.join("\n")
        );
        // Each explanation is there, under the table.
        assert!(
            lines.iter().filter(|l| l.starts_with("▸ ")).count() == 3,
            "{}",
            lines.join("\n")
        );
    }
}

fn plan_candidates_stay_a_table_at_80_and_100() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    for cols in [100u16, 80] {
        let lines = shown("plan --scheme examples/keyplan.yaml", cols);
        assert_fits(&lines, cols.into());
        let i = lines
            .iter()
            .position(|l| l.starts_with("cart_view (MGET)"))
            .unwrap_or_else(|| panic!("{}", lines.join("\n")));
        let top = lines[i..]
            .iter()
            .find(|l| l.starts_with('┌') || l.starts_with('▸'))
            .unwrap();
        assert!(
            top.starts_with('┌'),
            "{cols} columns:\n{}",
            lines[i..].join("\n")
        );
        // The recommendation's number is starred in the table and names its candidate below it.
        assert!(
            lines.iter().any(|l| l.starts_with("│ ★")),
            "{}",
            lines.join("\n")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("▸ ★") && l.contains("tag `{user:<user_id>}`")),
            "{}",
            lines.join("\n")
        );
        // Every figure stays: at 80 under short headers, with what they stand for below.
        let header = lines[i..].iter().find(|l| l.starts_with("│ #")).unwrap();
        for h in ["outcome", "trips", "skew", "moved", "pareto"] {
            assert!(header.contains(h), "{cols} columns: no {h}: {header}");
        }
        if cols == 80 {
            assert!(
                lines.iter().any(|l| l.starts_with("(trips: round trips;")),
                "{}",
                lines.join("\n")
            );
        }
    }
}

/// On a live cluster the nodes are `host:port` (15 characters, twice a figure's width): the
/// Pattern × node comparison of 4 masters stays a table at 80 and 100 columns with the ports
/// as headers and the host said under it, where it was one record per pattern.
fn live_pattern_by_node_stays_a_table_at_80_and_100() {
    if !have_script() {
        return crate::support::not_run("util-linux `script` is not installed");
    }
    let Some(cluster) = crate::cluster::Cluster::create_masters(4) else {
        return;
    };
    cluster.load(&crate::analyze::generated_keys(2000));
    let url = format!("redis://127.0.0.1:{}", cluster.nodes[0].port);
    for cols in [80u16, 100] {
        let lines = shown(&format!("analyze --cluster {url} --sample all"), cols);
        assert_fits(&lines, cols.into());
        let i = lines
            .iter()
            .position(|l| l.starts_with("Pattern × node"))
            .unwrap_or_else(|| panic!("{}", lines.join("\n")));
        let rest = &lines[i..];
        let table = rest
            .iter()
            .find(|l| l.starts_with('┌') || l.starts_with('▸'));
        assert!(
            table.is_some_and(|l| l.starts_with('┌')),
            "{cols} columns: Pattern × node is no table:\n{}",
            rest.join("\n")
        );
        let header = rest.iter().find(|l| l.starts_with("│ pattern")).unwrap();
        for n in &cluster.nodes {
            assert!(header.contains(&format!(":{}", n.port)), "{header}");
        }
        assert!(
            rest.iter()
                .any(|l| l.starts_with("(nodes: ports of 127.0.0.1)")),
            "{}",
            rest.join("\n")
        );
    }
    // Piped, the headers are the nodes' whole names.
    let out = crate::support::keyplan()
        .args(["analyze", "--cluster", &url, "--sample", "all"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("│ pattern")
            && l.contains(&format!("127.0.0.1:{}", cluster.nodes[0].port))),
        "{text}"
    );
}
