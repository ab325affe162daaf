//! Grafana-shaped InfluxQL against a real influxd: the same points go
//! through `/write` into Debian's influxd and into loom-app, then every
//! statement of `tests/dashboard/grafana_statements.txt` (its `$timeFilter`,
//! `$__interval` and template variables replaced as Grafana does) runs on
//! both, and the answers must be equal: values, times, series and their
//! order, empty buckets. Integers and strings compare exactly; floats
//! within 1e-9 relative (loom-app and influxd sum and divide in different
//! orders for some functions), and the test prints how many floats were
//! not bit-equal.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testing::influxd::{influxd_binary, Influxd};
use testing::App;

const BASE_S: u64 = 1_700_000_000;
const SECONDS: u64 = 600;
const HOSTS: &[(&str, &str)] = &[
    ("db-1", "eu"),
    ("db-2", "eu"),
    ("db-3", "us"),
    ("db-4", "ap"),
];

/// The points, as line protocol at precision s: four hosts, one point a
/// second, db-4 with gaps (empty buckets for fill), db-2's counter reset.
fn points() -> Vec<String> {
    let mut lines = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (h, (host, region)) in HOSTS.iter().enumerate() {
        let mut requests = 1_000 * h as u64;
        for s in 0..SECONDS {
            if *host == "db-4" && ((100..200).contains(&s) || (400..430).contains(&s)) {
                continue;
            }
            let r = next();
            requests += r % 50;
            if *host == "db-2" && s == 300 {
                requests = 3;
            }
            let usage = (r % 10_000) as f64 / 100.0 + 0.125;
            let idle = 100.0 - usage;
            let errors = (r >> 20) % 4;
            let duration = 50 + (r >> 32) % 5_000;
            lines.push(format!(
                "cpu,host={host},region={region} usage={usage},idle={idle},requests={requests}i,errors={errors}i,duration_us={duration}i {}",
                BASE_S + s
            ));
        }
    }
    lines
}

fn curl_write(url: &str, body: &str) -> (u16, String) {
    let f = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(f.path(), body).expect("body");
    let out = tempfile::NamedTempFile::new().expect("temp");
    let o = Command::new("curl")
        .args(["-s", "-X", "POST", "-o"])
        .arg(out.path())
        .args(["-w", "%{http_code}", "--data-binary"])
        .arg(format!("@{}", f.path().display()))
        .arg(format!("{url}/write?db=lp&precision=s"))
        .output()
        .expect("curl");
    let code = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    (
        code,
        std::fs::read_to_string(out.path()).unwrap_or_default(),
    )
}

fn query(url: &str, q: &str) -> Value {
    let o = Command::new("curl")
        .args(["-s", "-XPOST", &format!("{url}/query")])
        .args(["--data-urlencode", &format!("q={q}")])
        .args(["--data-urlencode", "db=lp", "--data-urlencode", "epoch=ns"])
        .output()
        .expect("curl");
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{q}: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

/// How the floats of two answers compared.
#[derive(Default, Debug)]
struct Floats {
    /// Equal doubles printed differently (`1.0` by loom-app, `1` by influxd).
    printed: u64,
    /// Doubles not bit-equal but within 1e-9 relative.
    last_bits: u64,
}

/// Equal up to floats within 1e-9 relative, counting how floats differed.
fn same(a: &Value, b: &Value, f: &mut Floats) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(p), Some(q)) if x.is_f64() || y.is_f64() => {
                    if p == q {
                        f.printed += 1;
                        return true;
                    }
                    let ok = (p - q).abs() <= 1e-9 * p.abs().max(q.abs());
                    f.last_bits += u64::from(ok);
                    ok
                }
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, f))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same(v, w, f)))
        }
        _ => a == b,
    }
}

/// The fixture's statements with Grafana's macros replaced.
pub fn statements() -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dashboard/grafana_statements.txt"),
    )
    .expect("fixture");
    let time_filter = format!(
        "time >= {}ms and time <= {}ms",
        BASE_S * 1000,
        (BASE_S + SECONDS) * 1000 - 1
    );
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.replace("$timeFilter", &time_filter)
                .replace("$__interval", "10s")
                .replace("$host1", "/^db-1$/")
                .replace("$host", "/^(db-1|db-4)$/")
        })
        .collect()
}

#[test]
fn grafana_statements_answer_as_influxd() {
    let Some(bin) = influxd_binary() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let influxd = Influxd::start(&bin, &dir.path().join("influxd"));
    let _app = App::builder()
        .store(&dir.path().join("store"))
        .no_otlp()
        .args(["--otlp-reorder-window-ms", "300"])
        .start();
    let loom = format!("http://{}", _app.http());
    let iurl = influxd.url.clone();
    let created = query(&iurl, "CREATE DATABASE lp");
    assert!(created["results"][0]["error"].is_null(), "{created}");

    let lines = points();
    let deadline = Instant::now() + Duration::from_secs(30);
    for chunk in lines.chunks(1000) {
        let body = chunk.join("\n");
        assert_eq!(curl_write(&iurl, &body).0, 204);
        loop {
            let (status, text) = curl_write(&loom, &body);
            if status == 204 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "loom-app /write: {status} {text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // loom-app shows points once its reorder window releases them.
    let count = "SELECT count(\"usage\") FROM \"cpu\"";
    let want = query(&iurl, count);
    let deadline = Instant::now() + Duration::from_secs(20);
    while query(&loom, count) != want {
        assert!(Instant::now() < deadline, "loom-app never held every point");
        std::thread::sleep(Duration::from_millis(200));
    }

    let mut floats = Floats::default();
    let mut failures = Vec::new();
    let all = statements();
    for q in &all {
        let a = query(&iurl, q);
        assert!(
            a.get("error").is_none() && a["results"][0].get("error").is_none(),
            "influxd refused {q}: {a}"
        );
        let b = query(&loom, q);
        let mut f = Floats::default();
        if !same(&a, &b, &mut f) {
            failures.push(format!("{q}\n  influxd:  {a}\n  loom-app: {b}"));
        }
        if f.last_bits > 0 {
            eprintln!("{} floats within 1e-9, not bit-equal: {q}", f.last_bits);
        }
        floats.printed += f.printed;
        floats.last_bits += f.last_bits;
    }
    eprintln!(
        "{} statements, {} equal; floats: {} equal but printed differently (1.0 / 1), {} within 1e-9 but not bit-equal",
        all.len(),
        all.len() - failures.len(),
        floats.printed,
        floats.last_bits
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
