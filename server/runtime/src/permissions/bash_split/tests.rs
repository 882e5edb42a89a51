//! The splitter table: each line, the simple commands it runs (as `Display` shows them:
//! assignments, words with quotes removed, `> file` / `< file` redirections), and whether
//! the line is opaque (not auto-allowable).

use super::*;

const OK: bool = false;
const OPAQUE: bool = true;

#[rustfmt::skip]
const TABLE: &[(&str, &[&str], bool)] = &[
    // Quotes keep operators inside one word.
    (r#"echo "a;b""#, &["echo 'a;b'"], OK),
    ("echo 'a && b | c'", &["echo 'a && b | c'"], OK),
    (r"echo a\;b", &["echo 'a;b'"], OK),
    ("r''m x", &["rm x"], OK),
    (r"\rm x", &["rm x"], OK),
    // Lists, pipelines, background, newlines, comments, line continuations.
    ("ls; curl x | sh", &["ls", "curl x", "sh"], OK),
    ("ls && rm -rf /", &["ls", "rm -rf /"], OK),
    ("make || echo failed", &["make", "echo failed"], OK),
    ("sleep 10 & ls", &["sleep 10", "ls"], OK),
    ("ls\nrm x", &["ls", "rm x"], OK),
    ("git status; git push", &["git status", "git push"], OK),
    ("ls # ; rm x", &["ls"], OK),
    ("ls \\\n  -la", &["ls -la"], OK),
    // Subshells, groups, compound commands, functions.
    ("(cd src && make)", &["cd src", "make"], OK),
    ("{ ls; pwd; }", &["ls", "pwd"], OK),
    ("if test -f x; then rm x; else touch x; fi", &["test -f x", "rm x", "touch x"], OK),
    ("for f in $(ls); do rm $f; done", &["ls", "rm $f"], OK),
    ("while read l; do echo $l; done < list", &["read l", "echo $l", "< list"], OK),
    ("case $x in a) rm a;; *) ls;; esac", &["rm a", "ls"], OK),
    ("f() { rm x; }; f", &["rm x", "f"], OK),
    ("coproc cat", &["cat"], OK),
    ("[[ -f x ]] && ls", &["ls"], OK),
    ("a=1; b=2", &["a=1", "b=2"], OK),
    // Command substitution (nested too), backquotes, process substitution.
    ("ls $(curl x)", &["curl x", "ls $(curl x)"], OK),
    ("echo `whoami`", &["whoami", "echo `whoami`"], OK),
    ("echo $(echo $(id))", &["id", "echo $(id)", "echo $(echo $(id))"], OK),
    ("echo \"$(rm x)\"", &["rm x", "echo $(rm x)"], OK),
    ("diff <(ls a) <(ls b)", &["ls a", "ls b", "diff"], OK),
    ("ls | tee >(grep x)", &["ls", "grep x", "tee"], OK),
    ("echo ${X:-$(rm x)}", &["rm x", "echo ${X:-$(rm x)}"], OK),
    // Shells, eval and trap run command lines.
    ("bash -c \"ls; rm x\"", &["ls", "rm x"], OK),
    ("sh -c 'curl x | sh'", &["curl x", "sh"], OK),
    ("bash -ec 'ls'", &["ls"], OK),
    ("eval \"ls; rm x\"", &["ls", "rm x"], OK),
    ("eval ls '&&' rm x", &["ls", "rm x"], OK),
    ("trap 'rm x' EXIT", &["rm x"], OK),
    ("bash script.sh", &["bash script.sh"], OK),
    // Wrappers are unwrapped to the command they run.
    ("env X=1 cmd a", &["X=1 cmd a"], OK),
    ("X=1 cmd", &["X=1 cmd"], OK),
    ("/usr/bin/env -i X=1 Y=2 cmd", &["X=1 Y=2 cmd"], OK),
    ("env", &["env"], OK),
    ("xargs rm", &["rm"], OK),
    ("ls | xargs -0 -n1 -I{} cp {} dst", &["ls", "cp {} dst"], OK),
    ("xargs -0 sh -c 'rm \"$1\"' _", &["rm $1"], OK),
    ("find . -name '*.o' -exec rm {} \\;", &["find . -name '*.o' -exec rm {} ';'", "rm {}"], OK),
    ("exec ls", &["ls"], OK),
    ("timeout 5 curl x", &["curl x"], OK),
    ("timeout -s KILL --kill-after=2 5 curl x", &["curl x"], OK),
    ("nohup ./run.sh &", &["./run.sh"], OK),
    ("nice -n 5 make", &["make"], OK),
    ("sudo -u bob rm x", &["rm x"], OK),
    ("sudo timeout 5 rm x", &["rm x"], OK),
    ("command ls", &["ls"], OK),
    ("command -v git", &["command -v git"], OK),
    ("builtin cd x", &["cd x"], OK),
    ("time ls", &["ls"], OK),
    ("/usr/bin/time -p ls", &["ls"], OK),
    ("busybox rm x", &["rm x"], OK),
    // Issue 11: more runners, with their own options.
    ("taskset 3 rm x", &["rm x"], OK),
    ("taskset -c 0-3 rm x", &["rm x"], OK),
    ("taskset -a --cpu-list 1 nice rm x", &["rm x"], OK),
    ("taskset -p 3 1234", &["taskset -p 3 1234"], OK),
    ("ionice -c 3 rm x", &["rm x"], OK),
    ("ionice -c2 -n7 -t rm x", &["rm x"], OK),
    ("ionice -p 1234", &["ionice -p 1234"], OK),
    ("chrt -f 10 rm x", &["rm x"], OK),
    ("chrt --idle 0 rm x", &["rm x"], OK),
    ("chrt -o rm x", &["rm x"], OK),
    ("chrt -p 1234", &["chrt -p 1234"], OK),
    ("setpriv --reuid=1000 --regid 1000 --clear-groups rm x", &["rm x"], OK),
    ("setpriv -d", &["setpriv -d"], OK),
    ("prlimit --nofile=64 --as rm x", &["rm x"], OK),
    ("prlimit -n512 -- rm x", &["rm x"], OK),
    ("prlimit -p 1234 --nofile=64", &["prlimit -p 1234 --nofile=64"], OK),
    ("script -qc 'rm x' /dev/null", &["rm x"], OK),
    ("script -q -c 'ls; rm x'", &["ls", "rm x"], OK),
    ("script --command='rm x' -q log", &["rm x"], OK),
    ("script -q log", &["script -q log"], OK),
    ("stdbuf -oL -e0 rm x", &["rm x"], OK),
    ("flock /tmp/l rm x", &["rm x"], OK),
    ("flock -w 5 -x /tmp/l -c 'rm x'", &["rm x"], OK),
    ("flock 9", &["flock 9"], OK),
    ("chroot / rm x", &["rm x"], OK),
    ("chroot --userspec=1:1 /srv sh -c 'rm x'", &["rm x"], OK),
    ("/lib64/ld-linux-x86-64.so.2 /bin/rm x", &["/bin/rm x"], OK),
    ("ld.so --argv0 ls /bin/rm x", &["/bin/rm x"], OK),
    ("ld.so --preload /tmp/x.so /bin/ls", &["ld.so --preload /tmp/x.so /bin/ls"], OPAQUE),
    ("taskset $M rm x", &["taskset $M rm x"], OPAQUE),
    ("prlimit --bogus rm x", &["prlimit --bogus rm x"], OPAQUE),
    // Issue 11: programs that run code written in their arguments are opaque.
    ("awk '{print $1}' f", &["awk '{print $1}' f"], OK),
    ("awk -F: -v OFS=, '$1 || $2 {print}' f", &["awk -F: -v OFS=, '$1 || $2 {print}' f"], OK),
    ("awk 'BEGIN{system(\"rm x\")}'", &["awk 'BEGIN{system(\"rm x\")}'"], OPAQUE),
    ("gawk 'BEGIN { \"id\" | getline x }'", &["gawk 'BEGIN { \"id\" | getline x }'"], OPAQUE),
    ("mawk '{ print | \"sh\" }' f", &["mawk '{ print | \"sh\" }' f"], OPAQUE),
    ("nawk -f prog.awk f", &["nawk -f prog.awk f"], OPAQUE),
    ("gawk -e '@load \"x\"'", &["gawk -e '@load \"x\"'"], OPAQUE),
    ("busybox awk 'BEGIN{system(\"rm x\")}'", &["awk 'BEGIN{system(\"rm x\")}'"], OPAQUE),
    ("git status", &["git status"], OK),
    ("git -C repo -c user.name=x commit -m y", &["git -C repo -c user.name=x commit -m y"], OK),
    ("git -c alias.x='!rm y' x", &["git -c 'alias.x=!rm y' x"], OPAQUE),
    ("git -c core.pager='rm y' log", &["git -c 'core.pager=rm y' log"], OPAQUE),
    ("git -c core.sshCommand=x fetch", &["git -c core.sshCommand=x fetch"], OPAQUE),
    ("git --config-env=core.editor=E commit", &["git --config-env=core.editor=E commit"], OPAQUE),
    ("git rebase --exec 'rm y' main", &["git rebase --exec 'rm y' main"], OPAQUE),
    ("git rebase -i main", &["git rebase -i main"], OK),
    ("git submodule foreach 'rm y'", &["git submodule foreach 'rm y'"], OPAQUE),
    ("git fetch --upload-pack='rm y' origin", &["git fetch '--upload-pack=rm y' origin"], OPAQUE),
    ("tar czf a.tgz src", &["tar czf a.tgz src"], OK),
    ("tar --checkpoint=1 --checkpoint-action=exec='rm y' -cf a.tar .", &["tar --checkpoint=1 '--checkpoint-action=exec=rm y' -cf a.tar ."], OPAQUE),
    ("tar --to-com=sh -xf a.tar", &["tar --to-com=sh -xf a.tar"], OPAQUE),
    ("tar --use-compress-program 'sh -c x' -xf a.tar", &["tar --use-compress-program 'sh -c x' -xf a.tar"], OPAQUE),
    ("tar -I 'sh -c x' -xf a.tar", &["tar -I 'sh -c x' -xf a.tar"], OPAQUE),
    ("tar xIf prog a.tar", &["tar xIf prog a.tar"], OPAQUE),
    ("find . -delete", &["find . -delete"], OPAQUE),
    ("find . -name x -fprint out", &["find . -name x -fprint out"], OPAQUE),
    // Redirections: files are listed, descriptors and devices are not files.
    ("ls > out.txt 2>&1", &["ls > out.txt"], OK),
    ("sort < in.txt >> out.txt", &["sort < in.txt > out.txt"], OK),
    ("ls &> log", &["ls > log"], OK),
    ("ls 2>&-", &["ls"], OK),
    ("echo hi > /dev/null", &["echo hi > /dev/null"], OK),
    ("{ ls; } > out", &["ls", "> out"], OK),
    ("> empty", &["> empty"], OK),
    ("cat <<< \"$(id)\"", &["id", "cat"], OK),
    ("cat <<EOF\n$(id)\nEOF", &["id", "cat"], OK),
    ("cat <<'EOF'\n$(id)\nEOF", &["cat"], OK),
    // What cannot be vouched for is opaque.
    ("echo \"abc", &[], OPAQUE),
    ("echo 'abc", &[], OPAQUE),
    ("echo $(ls", &[], OPAQUE),
    ("$CMD x", &["$CMD x"], OPAQUE),
    ("sh -c \"$X\"", &["sh -c $X"], OPAQUE),
    ("eval $X", &[], OPAQUE),
    ("echo ${!x}", &["echo ${!x}"], OPAQUE),
    ("echo ${x@P}", &["echo ${x@P}"], OPAQUE),
    ("echo $((x + 1))", &["echo $((x + 1))"], OPAQUE),
    ("echo ${a[$i]}", &["echo ${a[$i]}"], OPAQUE),
    ("(( n++ ))", &[], OPAQUE),
    ("[[ $x -eq 1 ]]", &[], OPAQUE),
    ("PATH=/tmp ls", &["PATH=/tmp ls"], OPAQUE),
    ("LD_PRELOAD=x.so ls", &["LD_PRELOAD=x.so ls"], OPAQUE),
    ("env PATH=/tmp ls", &["PATH=/tmp ls"], OPAQUE),
    ("export PATH=/tmp; ls", &["export PATH=/tmp", "ls"], OPAQUE),
    ("x='a[$(rm y)]'", &["x='a[$(rm y)]'"], OPAQUE),
    ("printf -v 'a[$(rm x)]' y", &["printf -v 'a[$(rm x)]' y"], OPAQUE),
    ("sudo -s ls", &["sudo -s ls"], OPAQUE),
    ("bash -i -c ls", &["bash -i -c ls"], OPAQUE),
    ("env -S 'rm x'", &["env -S 'rm x'"], OPAQUE),
    ("timeout $T rm x", &["timeout $T rm x"], OPAQUE),
    ("find . $ARGS", &["find . $ARGS"], OPAQUE),
    ("find . -exec rm {}", &["find . -exec rm {}"], OPAQUE),
];

#[test]
fn splitter_table() {
    let mut failures = Vec::new();
    for (line, expected, opaque) in TABLE {
        let split = split_command(line);
        let shown: Vec<String> = split.commands.iter().map(ToString::to_string).collect();
        if shown != *expected || split.is_opaque() != *opaque {
            failures.push(format!(
                "{line:?}\n    got {shown:?} opaque={:?}\n    want {expected:?} opaque={opaque}",
                split.opaque
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn words(line: &str) -> Vec<ShellWord> {
    let split = split_command(line);
    assert!(!split.is_opaque(), "{line}: {:?}", split.opaque);
    split
        .commands
        .last()
        .map(|c| c.words.clone())
        .unwrap_or_default()
}

#[test]
fn run_time_values_are_marked_dynamic() {
    let cases: &[(&str, &[bool])] = &[
        ("rm a 'b c' \"d\"", &[false, false, false, false]),
        (
            "rm $X \"$Y\" ~/x *.tmp {a,b} $(id) {}",
            &[false, true, true, true, true, true, true, false],
        ),
        ("rm '*.tmp' \"{a,b}\" \\*", &[false, false, false, false]),
    ];
    for (line, dynamic) in cases {
        let got: Vec<bool> = words(line).iter().map(|w| w.dynamic).collect();
        assert_eq!(got, *dynamic, "{line}");
    }
}

#[test]
fn wrappers_are_recorded_outermost_first() {
    let split = split_command("sudo timeout 5 rm x");
    let [command] = split.commands.as_slice() else {
        panic!("{split:?}");
    };
    let layers: Vec<String> = command
        .wrapped_by
        .iter()
        .map(|w| display_words(w))
        .collect();
    assert_eq!(layers, ["sudo timeout 5 rm x", "timeout 5 rm x"]);

    let split = split_command("bash -c 'ls; rm x'");
    for command in &split.commands {
        assert_eq!(
            command
                .wrapped_by
                .iter()
                .map(|w| display_words(w))
                .collect::<Vec<_>>(),
            ["bash -c 'ls; rm x'"]
        );
    }
}

#[test]
fn appended_arguments_are_open_ended() {
    let cases = [
        ("xargs rm", true),
        ("find . -exec rm {} +", true),
        ("find . -exec rm {} \\;", false),
        ("timeout 5 rm x", false),
    ];
    for (line, open_ended) in cases {
        let split = split_command(line);
        let last = split.commands.last().map(|c| c.open_ended);
        assert_eq!(last, Some(open_ended), "{line}");
    }
}

#[test]
fn hostile_input_is_opaque_not_a_crash() {
    let deep = format!("{}x{}", "$(".repeat(200), ")".repeat(200));
    assert!(split_command(&deep).is_opaque());
    let deep_if = format!(
        "{}true{}",
        "if true; then ".repeat(2000),
        "; fi".repeat(2000)
    );
    assert!(split_command(&deep_if).is_opaque());
    let deep_loops = format!(
        "{}ls{}",
        "while true; do ".repeat(2000),
        "; done".repeat(2000)
    );
    assert!(split_command(&deep_loops).is_opaque());
    let deep_not = format!("[[ {}a ]]", "! ".repeat(5000));
    assert!(split_command(&deep_not).is_opaque());
    let long_test = format!("[[ {} ]]", vec!["a"; 5000].join(" && "));
    assert!(split_command(&long_test).is_opaque());
    let shallow_if = format!("{}ls{}", "if true; then ".repeat(20), "; fi".repeat(20));
    assert!(!split_command(&shallow_if).is_opaque());
    // Each `eval` is a command line of its own, one level deeper.
    let deep_eval = format!("{}ls", "eval ".repeat(MAX_NESTING + 5));
    assert!(split_command(&deep_eval).is_opaque());
    let shallow_eval = format!("{}ls", "eval ".repeat(5));
    assert!(!split_command(&shallow_eval).is_opaque());
    let long = "a ".repeat(MAX_LINE_BYTES);
    assert!(split_command(&long).is_opaque());
    // Found by the `bash_split` fuzz target: the parser panics on a descriptor number too
    // large for it; the guard around the parser makes the line opaque.
    let huge_fd = format!("{}>>x", "1".repeat(30));
    assert!(split_command(&huge_fd).is_opaque());
    // Found by the `bash_split` fuzz target: the word parser backtracks at each level of a
    // malformed word (0.2 s here, minutes a few levels deeper); past MAX_PAREN_NESTING a
    // word is not parsed.
    let split = split_command(r#"$(((@((((((((((((((("((()))))))))))))))))))))"#);
    assert!(split.is_opaque());
    assert!(
        split.opaque.iter().any(|o| o.contains("levels deep")),
        "{:?}",
        split.opaque
    );
    // Found by the `bash_split` fuzz target: the parser's tokenizer looped forever,
    // allocating until the process ran out of memory, on a line ending inside a
    // here-document with an empty delimiter.
    for line in ["[[ 2$(<<-  ", "echo x$(<<- \"\" ", "( x$(cat <<  "] {
        assert!(split_command(line).is_opaque(), "{line}");
    }
    // Found by the `bash_split` fuzz target: the same backtracking in the line parser,
    // on unclosed parentheses (`((w` 14 times took 4 s, each level costing about 3.6x).
    let split = split_command(&format!("{}x #", "((w".repeat(14)));
    assert!(
        split.opaque.iter().any(|o| o.contains("levels deep")),
        "{:?}",
        split.opaque
    );
    // Found by the `bash_split` fuzz target: the word parser backtracks over each unclosed
    // subscript (`${a[$i}`), some 20 times longer per one more; six in a here-document
    // took 7 minutes, three beside three unclosed `$("` 2.7 s.
    for line in [
        format!("cat <<EOF\n{}\nEOF\n", "${a[$i}or ".repeat(6)),
        format!("echo \"{}\"", "${a[$i}or ".repeat(6)),
        format!("c t<<EOF\n{}\nEOF\n", "$(\"[or ${a[$i}or ".repeat(3)),
        "echo ${a[1}".to_owned(),
    ] {
        let split = split_command(&line);
        assert!(
            split.opaque.iter().any(|o| o.contains("subscript with no")),
            "{line}: {:?}",
            split.opaque
        );
    }
    // Found by the `bash_split` fuzz target: here-document bodies backtrack far more than
    // lines; four `$((x $($[T` unclosed took 3.7 s.
    for body in [
        "$((x $($[T ".repeat(4),
        "$(date".to_owned(),
        "$(( $(( $(( $(( 1 )) )) )) ))".to_owned(),
    ] {
        let split = split_command(&format!("cat <<EOF\n{body}\nEOF\n"));
        assert!(
            split.opaque.iter().any(|o| o.contains("here-document")),
            "{body}: {:?}",
            split.opaque
        );
    }
    let many = split_command("cat <<EOF\n$(a) $(b) $(c) $(d) $(e)\nEOF\n");
    assert!(
        many.opaque.iter().any(|o| o.contains("substitutions")),
        "{:?}",
        many.opaque
    );
    let fine = split_command("cat <<EOF\nat $(date) in ${HOME} (see notes)\nEOF\n");
    assert_eq!(fine.commands.len(), 2, "{:?}", fine.opaque);
    let closed = split_command(&format!("echo {}", "${a[1]} ".repeat(8)));
    assert!(!closed.is_opaque(), "{:?}", closed.opaque);
    // Within the limits, deep nesting is walked (and stays within a thread's stack).
    let levels = MAX_PAREN_NESTING;
    let nested = format!("echo {}id{}", "$(echo ".repeat(levels), ")".repeat(levels));
    let split = split_command(&nested);
    assert!(!split.is_opaque(), "{:?}", split.opaque);
    assert_eq!(split.commands.len(), levels + 1);
    assert_eq!(
        split.commands.first().map(ToString::to_string).as_deref(),
        Some("echo id")
    );
    let levels = MAX_NESTING - 4;
    let groups = format!("{}ls{}", "{ ".repeat(levels), "; }".repeat(levels));
    let split = split_command(&groups);
    assert!(!split.is_opaque(), "{:?}", split.opaque);
}

#[test]
fn the_ansi_c_form_is_decoded_or_dynamic() {
    assert_eq!(words("echo $'a\\tb'")[1], ShellWord::literal("a\tb"));
    assert!(words("echo $'\\x41'")[1].dynamic);
}

#[test]
fn long_flat_lines_split_within_limits() {
    for sep in ["; ", " && ", " | ", "\n"] {
        let line = vec!["ls -la"; (MAX_LINE_BYTES / 12).max(1)].join(sep);
        let split = split_command(&line);
        assert!(!split.is_opaque(), "{sep:?}: {:?}", split.opaque);
        assert_eq!(split.commands.len(), MAX_LINE_BYTES / 12, "{sep:?}");
    }
}

#[test]
fn random_lines_never_panic() {
    // A fixed xorshift sequence over shell punctuation: the splitter must answer (often
    // "opaque") for anything, never panic.
    let alphabet: Vec<char> = "ab $(){}[]<>|&;'\"`\\!#=*?~-\n,.:@%^+019".chars().collect();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let len = usize::try_from(next() % 32).unwrap_or(0);
        let line: String = (0..len)
            .map(|_| alphabet[usize::try_from(next() % alphabet.len() as u64).unwrap_or(0)])
            .collect();
        let split = split_command(&line);
        for command in &split.commands {
            let _ = command.to_string();
        }
    }
}
