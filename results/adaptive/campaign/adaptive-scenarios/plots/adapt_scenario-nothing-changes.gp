# per-iteration plot of the twins scenario=nothing-changes of campaign adaptive-scenarios, written by wavepipe harvest; run: gnuplot adapt_scenario-nothing-changes.gp
set datafile missing "-"
set grid
set key outside right top
set xlabel "iteration"
set ylabel "samples/s (each kept iteration)"
set yrange [0:20.1411]
set title "adaptive-scenarios: samples/s per iteration, scenario=nothing-changes" . "\n" . "dotted: plan changes"
set terminal svg size 900,540 fixed noenhanced font "sans,12" background rgb "white"
set output 'adapt_scenario-nothing-changes.svg.tmp'
plot 'adapt_scenario-nothing-changes.dat' index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title "adapt=none", \
     'adapt_scenario-nothing-changes.dat' index 1 using 1:2 with linespoints lc 2 lw 2 pt 7 ps 0.6 title "adapt=both"
unset output
set terminal pngcairo size 900,540 noenhanced font "sans,10" background rgb "white"
set output 'adapt_scenario-nothing-changes.png.tmp'
plot 'adapt_scenario-nothing-changes.dat' index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title "adapt=none", \
     'adapt_scenario-nothing-changes.dat' index 1 using 1:2 with linespoints lc 2 lw 2 pt 7 ps 0.6 title "adapt=both"
unset output
