package batch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pytest's own --junitxml (from ripple run's pytest arguments or the ini
// file's addopts): the kernels are workers, so pytest's junitxml plugin
// leaves the file to the controller, and the run writes it as a serial
// pytest session would (LogXML.pytest_sessionfinish): one <testsuite>
// named junit_suite_name in <testsuites>, the testcases in pytest's
// order with the children pytest's plugin gives them (Result.JUnit),
// junit_family's attributes (xunit1: file and line; xunit2: neither),
// pytest's counts (a test that failed and errored in teardown is two
// testcases, counted once in tests). Only the times differ from a serial
// run's.

// pytestCase is a testcase of pytest's file.
type pytestCase struct {
	classname, name, file string
	line                  int // 0-based; -1: none
	time                  string
	children              []pytestChild
	// attrs: what record_xml_attribute added (xunit1 only, as pytest);
	// props: record_property's <properties>; name and value each.
	attrs, props [][2]string
}

// pytestChild is a child of a testcase: the attributes in pytest's order.
type pytestChild struct {
	tag, typ, message, text string
}

// xmlWriter writes XML as Python's ElementTree does (pytest writes its
// file with it): attributes in the given order, `<tag />` when empty, and
// pytest's bin_xml_escape of characters XML cannot hold.
type xmlWriter struct{ bytes.Buffer }

func (w *xmlWriter) open(tag string, attrs ...string) {
	w.WriteString("<" + tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		w.WriteString(" " + attrs[i] + `="`)
		w.WriteString(attrEscaper.Replace(binXMLEscape(attrs[i+1])))
		w.WriteString(`"`)
	}
}

func (w *xmlWriter) element(tag, text string, attrs ...string) {
	w.open(tag, attrs...)
	if text == "" {
		w.WriteString(" />")
		return
	}
	w.WriteString(">" + textEscaper.Replace(binXMLEscape(text)) + "</" + tag + ">")
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\r", "&#13;", "\n", "&#10;", "\t", "&#09;")
)

// binXMLEscape is pytest's bin_xml_escape: a character XML cannot hold
// becomes #xNN. So does one above U+FFFF, which XML can hold: pytest's
// pattern spells that range "\u10000-\u10FFFF", which Python reads as
// U+1000, "0-\u10FF" and "FF" (dateutil's suite: pytest writes
// gettz('#x1F43C') for gettz('🐼')).
func binXMLEscape(s string) string {
	legal := func(r rune) bool {
		return r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0x7E) || (r >= 0x80 && r <= 0xD7FF) ||
			(r >= 0xE000 && r <= 0xFFFD)
	}
	if strings.IndexFunc(s, func(r rune) bool { return !legal(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case legal(r):
			b.WriteRune(r)
		case r <= 0xFF:
			fmt.Fprintf(&b, "#x%02X", r)
		default:
			fmt.Fprintf(&b, "#x%04X", r)
		}
	}
	return b.String()
}

// recorded takes from a testcase's children (Result.JUnit) what the test
// recorded: its attributes and properties into pc, and the testsuite's
// properties, which it returns.
func recorded(pc *pytestCase, children []JUnitChild, family string) (suite [][2]string) {
	for _, ch := range children {
		kv := [2]string{ch.Message, ch.Text}
		switch ch.Tag {
		case "attribute":
			// pytest's xunit2 keeps only the attributes of its schema
			// (classname and name: those it sets in their place).
			if family == "xunit1" || family == "legacy" || kv[0] == "classname" || kv[0] == "name" {
				pc.attrs = append(pc.attrs, kv)
			}
		case "property":
			pc.props = append(pc.props, kv)
		case "suite-property":
			suite = append(suite, kv)
		}
	}
	return suite
}

// setAttr sets name in attrs (name, value pairs): in its place when it is
// there, else last, as a Python dict keeps the order of its keys.
func setAttr(attrs []string, name, value string) []string {
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i] == name {
			attrs[i+1] = value
			return attrs
		}
	}
	return append(attrs, name, value)
}

// properties writes pytest's <properties> element, when there are any.
func (w *xmlWriter) properties(props [][2]string) {
	if len(props) == 0 {
		return
	}
	w.WriteString("<properties>")
	for _, p := range props {
		w.element("property", "", "name", p[0], "value", p[1])
	}
	w.WriteString("</properties>")
}

// WritePytestJUnit writes spec's file (pytest's --junitxml) for the
// tests of rep, atomically.
func WritePytestJUnit(spec *PytestJUnitXML, rep *Report) error {
	host, _ := os.Hostname()
	name := spec.SuiteName
	if name == "" {
		name = "pytest"
	}
	var cases []pytestCase
	var suiteProps [][2]string // the testsuite's <properties>, in the tests' order
	var errs, fails, skips, tests int
	for _, r := range rep.Results {
		if r.Entry.NodeID == "" {
			continue
		}
		for i, c := range junitCasesOf(r, false) {
			pc := pytestCase{classname: c.Classname, name: c.Name, time: c.Time, line: -1}
			if spec.Family != "xunit2" {
				pc.file = c.File
				if r.Entry.Line > 0 {
					pc.line = r.Entry.Line - 1
				}
			}
			tests += c.passes
			if i > 0 {
				tests-- // pytest's cnt_double_fail_tests
			}
			for _, p := range []struct {
				tag string
				p   *junitProblem
				n   *int
			}{{"failure", c.Failure, &fails}, {"error", c.Error, &errs}, {"skipped", c.Skipped, &skips}} {
				if p.p != nil {
					pc.children = append(pc.children, pytestChild{tag: p.tag, typ: p.p.Type, message: p.p.Message, text: p.p.Text})
					*p.n++
					tests++
				}
			}
			if i < len(r.JUnit) {
				suiteProps = append(suiteProps, recorded(&pc, r.JUnit[i], spec.Family)...)
			}
			if c.SystemOut != "" {
				pc.children = append(pc.children, pytestChild{tag: "system-out", text: c.SystemOut})
			}
			if c.SystemErr != "" {
				pc.children = append(pc.children, pytestChild{tag: "system-err", text: c.SystemErr})
			}
			cases = append(cases, pc)
		}
	}
	var w xmlWriter
	w.WriteString(`<?xml version="1.0" encoding="utf-8"?><testsuites>`)
	w.open("testsuite", "name", name, "errors", strconv.Itoa(errs), "failures", strconv.Itoa(fails), "skipped", strconv.Itoa(skips),
		"tests", strconv.Itoa(tests), "time", fmt.Sprintf("%.3f", rep.Duration.Seconds()),
		"timestamp", rep.Started.Format("2006-01-02T15:04:05.000000"), "hostname", host)
	w.WriteString(">")
	w.properties(suiteProps)
	for _, c := range cases {
		attrs := []string{"classname", c.classname, "name", c.name}
		if c.file != "" {
			attrs = append(attrs, "file", c.file)
		}
		if c.line >= 0 {
			attrs = append(attrs, "line", strconv.Itoa(c.line))
		}
		for _, a := range c.attrs {
			attrs = setAttr(attrs, a[0], a[1])
		}
		attrs = setAttr(attrs, "time", c.time)
		w.open("testcase", attrs...)
		if len(c.children) == 0 && len(c.props) == 0 {
			w.WriteString(" />")
			continue
		}
		w.WriteString(">")
		w.properties(c.props)
		for _, ch := range c.children {
			var attrs []string
			if ch.typ != "" {
				attrs = append(attrs, "type", ch.typ)
			}
			if ch.tag != "system-out" && ch.tag != "system-err" {
				attrs = append(attrs, "message", ch.message)
			}
			w.element(ch.tag, ch.text, attrs...)
		}
		w.WriteString("</testcase>")
	}
	w.WriteString("</testsuite></testsuites>")
	// As pytest's LogXML: the file's directory is made.
	if err := os.MkdirAll(filepath.Dir(spec.Path), 0o777); err != nil {
		return fmt.Errorf("%w: %w", ErrReport, err)
	}
	return writeFileAtomic(spec.Path, w.Bytes())
}
