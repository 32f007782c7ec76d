# predicted plot of campaign adaptive-scenarios, written by wavepipe harvest; run: gnuplot predicted.gp
set datafile missing "-"
set grid
set key outside right top
set xlabel "predicted samples/s (simulator)"
set ylabel "measured samples/s (median)"
set xrange [0:20.0913]
set yrange [0:20.0913]
set size ratio -1
set samples 2
set title "adaptive-scenarios: measured against predicted samples/s"
set terminal svg size 900,540 fixed noenhanced font "sans,12" background rgb "white"
set output 'predicted.svg.tmp'
plot 'predicted.dat' index 0 using 1:2 with points lc 1 pt 7 ps 1.2 title "scenario=bandwidth-steps adapt=none", \
     'predicted.dat' index 1 using 1:2 with points lc 2 pt 7 ps 1.2 title "scenario=bandwidth-steps adapt=both", \
     'predicted.dat' index 2 using 1:2 with points lc 3 pt 7 ps 1.2 title "scenario=bandwidth-steps-down adapt=none", \
     'predicted.dat' index 3 using 1:2 with points lc 4 pt 7 ps 1.2 title "scenario=bandwidth-steps-down adapt=both", \
     'predicted.dat' index 4 using 1:2 with points lc 5 pt 7 ps 1.2 title "scenario=preempted-network adapt=none", \
     'predicted.dat' index 5 using 1:2 with points lc 6 pt 7 ps 1.2 title "scenario=preempted-network adapt=both", \
     'predicted.dat' index 6 using 1:2 with points lc 7 pt 7 ps 1.2 title "scenario=contended-gpu adapt=none", \
     'predicted.dat' index 7 using 1:2 with points lc 8 pt 7 ps 1.2 title "scenario=contended-gpu adapt=both", \
     'predicted.dat' index 8 using 1:2 with points lc 9 pt 7 ps 1.2 title "scenario=nothing-changes adapt=none", \
     'predicted.dat' index 9 using 1:2 with points lc 10 pt 7 ps 1.2 title "scenario=nothing-changes adapt=both", \
     x with lines lc rgb "#808080" dt 2 title "y = x"
unset output
set terminal pngcairo size 900,540 noenhanced font "sans,10" background rgb "white"
set output 'predicted.png.tmp'
plot 'predicted.dat' index 0 using 1:2 with points lc 1 pt 7 ps 1.2 title "scenario=bandwidth-steps adapt=none", \
     'predicted.dat' index 1 using 1:2 with points lc 2 pt 7 ps 1.2 title "scenario=bandwidth-steps adapt=both", \
     'predicted.dat' index 2 using 1:2 with points lc 3 pt 7 ps 1.2 title "scenario=bandwidth-steps-down adapt=none", \
     'predicted.dat' index 3 using 1:2 with points lc 4 pt 7 ps 1.2 title "scenario=bandwidth-steps-down adapt=both", \
     'predicted.dat' index 4 using 1:2 with points lc 5 pt 7 ps 1.2 title "scenario=preempted-network adapt=none", \
     'predicted.dat' index 5 using 1:2 with points lc 6 pt 7 ps 1.2 title "scenario=preempted-network adapt=both", \
     'predicted.dat' index 6 using 1:2 with points lc 7 pt 7 ps 1.2 title "scenario=contended-gpu adapt=none", \
     'predicted.dat' index 7 using 1:2 with points lc 8 pt 7 ps 1.2 title "scenario=contended-gpu adapt=both", \
     'predicted.dat' index 8 using 1:2 with points lc 9 pt 7 ps 1.2 title "scenario=nothing-changes adapt=none", \
     'predicted.dat' index 9 using 1:2 with points lc 10 pt 7 ps 1.2 title "scenario=nothing-changes adapt=both", \
     x with lines lc rgb "#808080" dt 2 title "y = x"
unset output
