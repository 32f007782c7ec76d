# per-iteration plot of the twins scenario=contended-gpu of campaign adaptive-scenarios, written by wavepipe harvest; run: gnuplot adapt_scenario-contended-gpu.gp
set datafile missing "-"
set grid
set key outside right top
set xlabel "iteration"
set ylabel "samples/s (each kept iteration)"
set yrange [0:20.125]
set arrow from 20, graph 0 to 20, graph 1 nohead dt 2 lc rgb "gray40"
set label "slow 1 2" at 20, graph 0.97 left offset 0.3,0 font ",9"
set arrow from 40, graph 0 to 40, graph 1 nohead dt 2 lc rgb "gray40"
set label "slow 1 3" at 40, graph 0.93 left offset 0.3,0 font ",9"
set title "adaptive-scenarios: samples/s per iteration, scenario=contended-gpu" . "\n" . "dashed grey: the scenario's changes; dotted: plan changes"
set terminal svg size 900,540 fixed noenhanced font "sans,12" background rgb "white"
set output 'adapt_scenario-contended-gpu.svg.tmp'
plot 'adapt_scenario-contended-gpu.dat' index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title "adapt=none", \
     'adapt_scenario-contended-gpu.dat' index 1 using 1:2 with linespoints lc 2 lw 2 pt 7 ps 0.6 title "adapt=both", \
     'adapt_scenario-contended-gpu.dat' index 2 using 1:2 with impulses lc 2 lw 1.5 dt 3 title "adapt=both: plan changed"
unset output
set terminal pngcairo size 900,540 noenhanced font "sans,10" background rgb "white"
set output 'adapt_scenario-contended-gpu.png.tmp'
plot 'adapt_scenario-contended-gpu.dat' index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title "adapt=none", \
     'adapt_scenario-contended-gpu.dat' index 1 using 1:2 with linespoints lc 2 lw 2 pt 7 ps 0.6 title "adapt=both", \
     'adapt_scenario-contended-gpu.dat' index 2 using 1:2 with impulses lc 2 lw 1.5 dt 3 title "adapt=both: plan changed"
unset output
