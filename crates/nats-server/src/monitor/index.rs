//! `/` (or the base path itself): an HTML page linking the endpoints, as nats-server serves one.

use crate::server::VERSION;

const LINKS: &[(&str, &str)] = &[
    ("General", "/varz"),
    ("JetStream", "/jsz"),
    ("Connections", "/connz"),
    ("Accounts", "/accountz"),
    ("Account Stats", "/accstatz"),
    ("Subscriptions", "/subsz"),
    ("Routes", "/routez"),
    ("LeafNodes", "/leafz"),
    ("Gateways", "/gatewayz"),
    ("Raft Groups", "/raftz"),
    ("Health Probe", "/healthz"),
    ("Expvar", "/debug/vars"),
];

/// The page, with links under `base_path` (normalized: empty or `/name` without a trailing
/// slash).
pub fn page(base_path: &str) -> String {
    let mut html = String::from(
        "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rnats monitoring</title>\n\
         <style>body { font-family: sans-serif; margin-left: 32px } \
         a { display: block; padding-bottom: 6px; text-decoration: none } \
         .endpoint { font-size: 12px; color: #999; font-family: monospace }</style>\n\
         </head>\n<body>\n",
    );
    html.push_str(&format!("<h1>rnats</h1>\n<p>v{VERSION}</p>\n"));
    for (title, path) in LINKS {
        html.push_str(&format!(
            "<a href=\"{base_path}{path}\">{title} <span class=\"endpoint\">{path}</span></a>\n"
        ));
    }
    html.push_str("</body>\n</html>\n");
    html
}
