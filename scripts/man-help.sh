#!/bin/sh
# What help2man reads to make the man pages (Makefile.am, "man pages"):
#   man-help.sh WAVEPIPE COMMAND --help   the --help text of `wavepipe COMMAND`
#       (COMMAND wavepipe: of wavepipe itself) with each form of its usage
#       on one line (continuation lines start with - or [), the forms after
#       the first as help2man's "or:" lines, and each line of an Examples
#       section a paragraph of its own (help2man would join them)
#   man-help.sh WAVEPIPE COMMAND --name   the one-line summary for NAME: the
#       command's line in `wavepipe --help`, or for wavepipe itself the first
#       sentence of its description
# so the pages say what the program says and never drift from it.
set -eu
if [ $# -ne 3 ]; then
    echo "usage: man-help.sh WAVEPIPE COMMAND --help|--name" >&2
    exit 2
fi
wavepipe=$1 cmd=$2 what=$3

help_text() {
    if [ "$cmd" = wavepipe ]; then "$wavepipe" --help; else "$wavepipe" "$cmd" --help; fi
}

case $what in
--help)
    # capture first: a failing --help must fail the page
    text=$(help_text)
    printf '%s\n' "$text" | awk '
        NR == 1 && /^Usage:/ { usage = $0; open = 1; next }
        open && /^[ \t]*$/ { print usage; open = 0; print; next }
        open && /^ +[^-[ ]/ { print usage; sub(/^ +/, ""); usage = "  or:  " $0; next }
        open { sub(/^ +/, " "); usage = usage $0; next }
        /^Examples:$/ { print; examples = 1; next }
        examples && /^[ \t]*$/ { examples = 0; print; next }
        examples { print; if ($0 !~ /\\$/) print ""; next }
        { print }
        END { if (open) print usage }'
    ;;
--name)
    text=$("$wavepipe" --help)
    if [ "$cmd" = wavepipe ]; then
        printf '%s\n' "$text" | awk '
            /^wavepipe [a-z]/ { on = 1 }
            on { line = line (line == "" ? "" : " ") $0 }
            on && /\./ { exit }
            END { sub(/^wavepipe /, "", line); sub(/\..*/, "", line); print line }'
    else
        name=$(printf '%s\n' "$text" | awk -v c="$cmd" '$1 == c { $1 = ""; sub(/^ +/, ""); print; exit }')
        if [ -z "$name" ]; then
            echo "man-help.sh: '$cmd' is not in the command list of $wavepipe --help" >&2
            exit 1
        fi
        printf '%s\n' "$name"
    fi
    ;;
*)
    echo "man-help.sh: unknown request $what (--help or --name)" >&2
    exit 2
    ;;
esac
