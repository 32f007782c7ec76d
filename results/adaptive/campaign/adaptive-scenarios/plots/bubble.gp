# bubble plot of campaign adaptive-scenarios, written by wavepipe harvest; run: gnuplot bubble.gp
set datafile missing "-"
set grid
set key outside right top
set xtics (2)
set xrange [1.500:2.500]
set xlabel "nodes"
set ylabel "bubble ratio (median; dashed: simulated)"
set yrange [0:1]
set title "adaptive-scenarios: bubble ratio against nodes"
set terminal svg size 900,540 fixed noenhanced font "sans,12" background rgb "white"
set output 'bubble.svg.tmp'
plot 'harvest.dat' index 0 using 1:6 with linespoints lc 1 lw 2 pt 7 title "scenario=bandwidth-steps adapt=none", \
     'harvest.dat' index 0 using 1:7 with linespoints lc 1 dt 2 pt 6 title "scenario=bandwidth-steps adapt=none (simulated)", \
     'harvest.dat' index 1 using 1:6 with linespoints lc 2 lw 2 pt 7 title "scenario=bandwidth-steps adapt=both", \
     'harvest.dat' index 1 using 1:7 with linespoints lc 2 dt 2 pt 6 title "scenario=bandwidth-steps adapt=both (simulated)", \
     'harvest.dat' index 2 using 1:6 with linespoints lc 3 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=none", \
     'harvest.dat' index 2 using 1:7 with linespoints lc 3 dt 2 pt 6 title "scenario=bandwidth-steps-down adapt=none (simulated)", \
     'harvest.dat' index 3 using 1:6 with linespoints lc 4 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=both", \
     'harvest.dat' index 3 using 1:7 with linespoints lc 4 dt 2 pt 6 title "scenario=bandwidth-steps-down adapt=both (simulated)", \
     'harvest.dat' index 4 using 1:6 with linespoints lc 5 lw 2 pt 7 title "scenario=preempted-network adapt=none", \
     'harvest.dat' index 4 using 1:7 with linespoints lc 5 dt 2 pt 6 title "scenario=preempted-network adapt=none (simulated)", \
     'harvest.dat' index 5 using 1:6 with linespoints lc 6 lw 2 pt 7 title "scenario=preempted-network adapt=both", \
     'harvest.dat' index 5 using 1:7 with linespoints lc 6 dt 2 pt 6 title "scenario=preempted-network adapt=both (simulated)", \
     'harvest.dat' index 6 using 1:6 with linespoints lc 7 lw 2 pt 7 title "scenario=contended-gpu adapt=none", \
     'harvest.dat' index 6 using 1:7 with linespoints lc 7 dt 2 pt 6 title "scenario=contended-gpu adapt=none (simulated)", \
     'harvest.dat' index 7 using 1:6 with linespoints lc 8 lw 2 pt 7 title "scenario=contended-gpu adapt=both", \
     'harvest.dat' index 7 using 1:7 with linespoints lc 8 dt 2 pt 6 title "scenario=contended-gpu adapt=both (simulated)", \
     'harvest.dat' index 8 using 1:6 with linespoints lc 9 lw 2 pt 7 title "scenario=nothing-changes adapt=none", \
     'harvest.dat' index 8 using 1:7 with linespoints lc 9 dt 2 pt 6 title "scenario=nothing-changes adapt=none (simulated)", \
     'harvest.dat' index 9 using 1:6 with linespoints lc 10 lw 2 pt 7 title "scenario=nothing-changes adapt=both", \
     'harvest.dat' index 9 using 1:7 with linespoints lc 10 dt 2 pt 6 title "scenario=nothing-changes adapt=both (simulated)"
unset output
set terminal pngcairo size 900,540 noenhanced font "sans,10" background rgb "white"
set output 'bubble.png.tmp'
plot 'harvest.dat' index 0 using 1:6 with linespoints lc 1 lw 2 pt 7 title "scenario=bandwidth-steps adapt=none", \
     'harvest.dat' index 0 using 1:7 with linespoints lc 1 dt 2 pt 6 title "scenario=bandwidth-steps adapt=none (simulated)", \
     'harvest.dat' index 1 using 1:6 with linespoints lc 2 lw 2 pt 7 title "scenario=bandwidth-steps adapt=both", \
     'harvest.dat' index 1 using 1:7 with linespoints lc 2 dt 2 pt 6 title "scenario=bandwidth-steps adapt=both (simulated)", \
     'harvest.dat' index 2 using 1:6 with linespoints lc 3 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=none", \
     'harvest.dat' index 2 using 1:7 with linespoints lc 3 dt 2 pt 6 title "scenario=bandwidth-steps-down adapt=none (simulated)", \
     'harvest.dat' index 3 using 1:6 with linespoints lc 4 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=both", \
     'harvest.dat' index 3 using 1:7 with linespoints lc 4 dt 2 pt 6 title "scenario=bandwidth-steps-down adapt=both (simulated)", \
     'harvest.dat' index 4 using 1:6 with linespoints lc 5 lw 2 pt 7 title "scenario=preempted-network adapt=none", \
     'harvest.dat' index 4 using 1:7 with linespoints lc 5 dt 2 pt 6 title "scenario=preempted-network adapt=none (simulated)", \
     'harvest.dat' index 5 using 1:6 with linespoints lc 6 lw 2 pt 7 title "scenario=preempted-network adapt=both", \
     'harvest.dat' index 5 using 1:7 with linespoints lc 6 dt 2 pt 6 title "scenario=preempted-network adapt=both (simulated)", \
     'harvest.dat' index 6 using 1:6 with linespoints lc 7 lw 2 pt 7 title "scenario=contended-gpu adapt=none", \
     'harvest.dat' index 6 using 1:7 with linespoints lc 7 dt 2 pt 6 title "scenario=contended-gpu adapt=none (simulated)", \
     'harvest.dat' index 7 using 1:6 with linespoints lc 8 lw 2 pt 7 title "scenario=contended-gpu adapt=both", \
     'harvest.dat' index 7 using 1:7 with linespoints lc 8 dt 2 pt 6 title "scenario=contended-gpu adapt=both (simulated)", \
     'harvest.dat' index 8 using 1:6 with linespoints lc 9 lw 2 pt 7 title "scenario=nothing-changes adapt=none", \
     'harvest.dat' index 8 using 1:7 with linespoints lc 9 dt 2 pt 6 title "scenario=nothing-changes adapt=none (simulated)", \
     'harvest.dat' index 9 using 1:6 with linespoints lc 10 lw 2 pt 7 title "scenario=nothing-changes adapt=both", \
     'harvest.dat' index 9 using 1:7 with linespoints lc 10 dt 2 pt 6 title "scenario=nothing-changes adapt=both (simulated)"
unset output
