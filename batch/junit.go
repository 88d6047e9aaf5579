package batch

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The JUnit XML report: the dialect CI systems (Jenkins, GitLab, GitHub
// actions' test reporters, Azure) accept. One testsuite per module, one
// testcase per entry:
//
//	<testsuites name="ripple run" tests failures errors skipped time timestamp>
//	  <testsuite name="test_math" tests failures errors skipped time timestamp hostname>
//	    <testcase name="TestCalc.test_method" classname="test_math" time="0.002" file="test_math.py" line="36">
//	      <failure message="AssertionError" type="AssertionError">where, traceback, values</failure>
//	      <system-out>what it printed</system-out>
//	      <system-err>...</system-err>
//	    </testcase>
//
// failed is a <failure>; error, crashed and timeout are an <error> whose
// type is the status ("crashed", "timeout", or the engine's kind:
// "compileError"); skipped and interrupted are <skipped>. Times are in
// seconds.
type junitSuites struct {
	XMLName   xml.Name     `xml:"testsuites"`
	Name      string       `xml:"name,attr"`
	Tests     int          `xml:"tests,attr"`
	Failures  int          `xml:"failures,attr"`
	Errors    int          `xml:"errors,attr"`
	Skipped   int          `xml:"skipped,attr"`
	Time      string       `xml:"time,attr"`
	Timestamp string       `xml:"timestamp,attr,omitempty"`
	Suites    []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	XMLName   xml.Name    `xml:"testsuite"`
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Hostname  string      `xml:"hostname,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
	// passes: the test's call passed (pytest's junitxml counts it as a
	// test even when its teardown then failed).
	passes int
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

const junitName = "ripple run"

// WriteJUnit writes the report as JUnit XML to path, atomically.
func WriteJUnit(path string, rep *Report) error {
	host, _ := os.Hostname()
	stamp := rep.Started.UTC().Format(time.RFC3339)
	var cases []junitCase
	for _, r := range rep.Results {
		for _, c := range junitCasesOf(r, true) {
			// ripple's dialect: every failure and error has a type (pytest's
			// own file, WritePytestJUnit, has none).
			if c.Failure != nil && c.Failure.Type == "" {
				c.Failure.Type = exceptionType(r.Message)
			}
			if c.Error != nil && c.Error.Type == "" {
				c.Error.Type = string(StatusError)
			}
			cases = append(cases, c)
		}
	}
	doc := junitDocument(cases, seconds3(rep.Duration.Seconds()), stamp, host)
	return writeJUnitDoc(path, doc)
}

// junitCasesOf is one entry's testcases: a test's as pytest's junitxml
// writes them (Result.JUnit: two for a failure and a teardown error, the
// failure's text pytest's longrepr with its captured output sections,
// system-out and system-err only as junit_logging says, unless keepOutput:
// ripple's dialect keeps what the test printed), else one.
func junitCasesOf(r *Result, keepOutput bool) []junitCase {
	c := junitCaseOf(r)
	if r.Entry.NodeID == "" || (r.JUnit == nil && r.Status != StatusPassed && r.Status != StatusXPassed) {
		return []junitCase{c}
	}
	if r.JUnit == nil {
		c.passes = 1 // passed or xpassed, nothing to write
		return []junitCase{c}
	}
	c.Failure, c.Error, c.Skipped = nil, nil, nil
	if !keepOutput {
		c.SystemOut, c.SystemErr = "", ""
	}
	out := []junitCase{c}
	for i, children := range r.JUnit {
		if i > 0 {
			c.Time, c.SystemOut, c.SystemErr = "0.000", "", ""
			out = append(out, c)
		}
		cur := &out[len(out)-1]
		for _, ch := range children {
			p := &junitProblem{Message: ch.Message, Type: ch.Type, Text: ch.Text}
			switch ch.Tag {
			case "failure":
				cur.Failure = p
			case "error":
				cur.Error = p
			case "skipped":
				cur.Skipped = p
			case "system-out":
				if !keepOutput {
					cur.SystemOut += ch.Text
				}
			case "system-err":
				if !keepOutput {
					cur.SystemErr += ch.Text
				}
			case "passed":
				cur.passes++
			}
		}
	}
	return out
}

// junitCaseOf is one entry's testcase, from its status (entries, and tests
// the kernel did not report: crashed, timed out, interrupted).
func junitCaseOf(r *Result) junitCase {
	name := r.Entry.Name()
	c := junitCase{Name: name, Classname: r.Entry.Pointer.Module, Time: seconds3(r.Duration.Seconds()),
		File: r.Entry.Path, Line: r.Entry.Line, SystemOut: r.Stdout, SystemErr: r.Stderr}
	if r.Entry.NodeID != "" {
		// As pytest's --junitxml (junit_family=xunit1, which keeps file
		// and line): its classname and name, its 0-based line.
		c.Classname, c.Line = r.Entry.JUnitClass, max(r.Entry.Line-1, 0)
	}
	var text bytes.Buffer
	writeDetails(&text, "", &Result{Failures: r.Failures, Message: r.Message, Diagnostic: r.Diagnostic, Values: r.Values}, true)
	problem := &junitProblem{Message: r.Message, Type: string(r.Status), Text: text.String()}
	switch r.Status {
	case StatusFailed:
		problem.Type = exceptionType(r.Message)
		c.Failure = problem
	case StatusError:
		problem.Type = cmp.Or(string(r.Kind), string(r.Status))
		c.Error = problem
	case StatusCrashed, StatusTimeout:
		c.Error = problem
	case StatusSkipped, StatusInterrupted:
		c.Skipped = &junitProblem{Message: r.Message}
	case StatusXFailed:
		// As pytest's junitxml: an expected failure is a skipped testcase.
		c.Skipped = &junitProblem{Type: "pytest.xfail", Message: r.Message}
	}
	return c
}

// exceptionType is the exception's name in "ZeroDivisionError: ...".
func exceptionType(message string) string {
	head, _, _ := strings.Cut(message, ":")
	if head == "" || strings.ContainsAny(head, " \n") {
		return "failed"
	}
	return head
}

// junitDocument groups testcases (in report order) into one suite per
// module, in the order their first testcases come, and counts them.
func junitDocument(cases []junitCase, totalTime, stamp, host string) *junitSuites {
	doc := &junitSuites{Name: junitName, Time: totalTime, Timestamp: stamp, Suites: []junitSuite{}}
	index := make(map[string]int)
	suiteTime := make(map[string]float64)
	for _, c := range cases {
		i, ok := index[c.Classname]
		if !ok {
			i = len(doc.Suites)
			index[c.Classname] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: c.Classname, Timestamp: stamp, Hostname: host})
		}
		s := &doc.Suites[i]
		s.Cases = append(s.Cases, c)
		s.Tests++
		doc.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
			doc.Failures++
		case c.Error != nil:
			s.Errors++
			doc.Errors++
		case c.Skipped != nil:
			s.Skipped++
			doc.Skipped++
		}
		t, _ := strconv.ParseFloat(c.Time, 64)
		suiteTime[c.Classname] += t
	}
	for i := range doc.Suites {
		doc.Suites[i].Time = seconds3(suiteTime[doc.Suites[i].Name])
	}
	return doc
}

func writeJUnitDoc(path string, doc *junitSuites) error {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("%w: encode %s: %w", ErrReport, path, err)
	}
	buf.WriteByte('\n')
	return writeFileAtomic(path, buf.Bytes())
}

// readJUnit reads a JUnit file: a <testsuites> document, or a single
// <testsuite> as some tools write.
func readJUnit(path string) (*junitSuites, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReport, err)
	}
	var doc junitSuites
	errSuites := xml.Unmarshal(data, &doc)
	if errSuites == nil {
		return &doc, nil
	}
	var suite junitSuite
	if err := xml.Unmarshal(data, &suite); err == nil {
		return &junitSuites{Name: junitName, Time: suite.Time, Timestamp: suite.Timestamp, Suites: []junitSuite{suite}}, nil
	}
	var syntax *xml.SyntaxError
	if errors.As(errSuites, &syntax) {
		return nil, fmt.Errorf("%w: %s: line %d: %s", ErrReport, path, syntax.Line, syntax.Msg)
	}
	return nil, fmt.Errorf("%w: %s is not a JUnit report: %w", ErrReport, path, errSuites)
}

// MergeJUnit merges JUnit reports (the shards of a run) into out,
// atomically: the testcases of every input, ordered by file, line and
// name, grouped into one suite per module, counts recomputed, the total
// time the longest input's (the shards ran side by side), the timestamp
// the earliest. A testcase (classname and name) in two inputs is an error
// naming it and both files.
func MergeJUnit(out string, ins []string) error {
	if len(ins) == 0 {
		return fmt.Errorf("%w: nothing to merge", ErrUsage)
	}
	var cases []junitCase
	origin := make(map[string]int)
	var total float64
	stamp, host := "", ""
	for i, in := range ins {
		doc, err := readJUnit(in)
		if err != nil {
			return err
		}
		t, _ := strconv.ParseFloat(doc.Time, 64)
		total = max(total, t)
		if doc.Timestamp != "" && (stamp == "" || doc.Timestamp < stamp) {
			stamp = doc.Timestamp
		}
		for _, s := range doc.Suites {
			host = cmp.Or(host, s.Hostname)
			for _, c := range s.Cases {
				key := c.Classname + "::" + c.Name
				if j, dup := origin[key]; dup {
					return fmt.Errorf("%w: testcase %s %s is in both %s and %s", ErrReport, c.Classname, c.Name, ins[j], in)
				}
				origin[key] = i
				cases = append(cases, c)
			}
		}
	}
	slices.SortStableFunc(cases, func(a, b junitCase) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Classname, b.Classname), cmp.Compare(a.Name, b.Name))
	})
	doc := junitDocument(cases, seconds3(total), stamp, host)
	for i := range doc.Suites {
		doc.Suites[i].Timestamp = stamp
	}
	return writeJUnitDoc(out, doc)
}

func seconds3(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }
